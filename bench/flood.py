"""A hostile flood: N bad messages among G good notifications, into one ``tally run``.

One ``tally run`` (embedded SQLite store, collector on a RabbitMQ vhost of the run's own) takes a
flood published on its exchange: N hostile messages in eight kinds, in turn (huge bodies of an
unmapped type, huge bodies that are no JSON, deep nesting, invalid UTF-8, a binary body under a
wrong content type, short texts that are no JSON, valid envelopes whose payload names no resource
or owner, valid envelopes with a timestamp of no accepted layout), every 500th one a body over the
collector's 1 MiB limit; the huge bodies are sized so that the whole flood is about ``--mb``
megabytes. Between them, G good ``compute.instance.create.end`` notifications, one instance each.

While it runs, a thread asks ``/healthz`` every 10 ms (the latencies, before the flood for the idle
figure and during it) and reads the daemon's resident memory. Once every message is acked, the
daemon is stopped with SIGTERM, and the bench checks:

- every hostile message counted: the unparseable, skipped and no-owner counters grew by N in all;
- 0 crashes (no actor restarted, the drain exits 0), every good notification stored once;
- the warning lines about bad messages bounded (10 a minute of each kind, and the lines that count
  those left out), the count of those left out said;
- the resident memory's growth and ``/healthz``'s p99 under the bounds of ``--max-rss-growth-mb``
  and ``--max-healthz-p99-ms``.

Prints the figures, writes them as JSON with ``--report``; exits 1 if a check failed.

    python -m bench.flood [--quick] [-n N] [--good G] [--mb MB] [--broker URL] [--report PATH]

Full size: 10,000 hostile messages, about 300 MB, 1,000 good ones; ``--quick`` (the suite's):
3,000, about 30 MB, 300 good.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path

import aio_pika
import anyio
import httpx

from bench.replica_nodes import AMQP, free_port, kill_if_running, own_vhost, wait_ready

OVERSIZED_EVERY = 500
OVERSIZED_BYTES = 1_200_000  # over the collector's 1 MiB limit: refused from the content header on
KINDS = 8
LIMIT_PER_WINDOW = 10  # the collector's warnings per kind and minute
START_TIMEOUT_S = 60.0


@dataclass
class Report:
    hostile: int
    good: int
    megabytes: float
    load_average: float = 0.0
    published_s: float = 0.0
    drained_s: float = 0.0
    counted: dict[str, float] = field(default_factory=dict)
    counted_total: float = 0.0
    acked: float = 0.0
    stored: int = 0
    stored_distinct: int = 0
    healthz_idle_p99_ms: float = 0.0
    healthz_p50_ms: float = 0.0
    healthz_p99_ms: float = 0.0
    healthz_max_ms: float = 0.0
    healthz_probes: int = 0
    control_p99_ms: float = 0.0
    control_max_ms: float = 0.0
    rss_start_mb: float = 0.0
    rss_peak_mb: float = 0.0
    rss_end_mb: float = 0.0
    warning_lines: int = 0
    left_out_said: int = 0
    log_bytes: int = 0
    exit_code: int | None = None
    problems: list[str] = field(default_factory=list)


# -- the messages ----------------------------------------------------------------------------------------


def _envelope(inner: dict[str, object]) -> bytes:
    return json.dumps({"oslo.version": "2.0", "oslo.message": json.dumps(inner)}).encode()


def good_body(n: int) -> bytes:
    return _envelope(
        {
            "message_id": str(uuid.uuid4()),
            "publisher_id": "compute.cmp-01",
            "event_type": "compute.instance.create.end",
            "priority": "INFO",
            "payload": {
                "instance_id": f"f1000d00-0000-4000-8000-{n:012d}",
                "tenant_id": "6f70aa",
                "instance_type": "m1.small",
                "memory_mb": 2048,
                "vcpus": 1,
                "root_gb": 20,
                "disk_gb": 20,
                "state": "active",
                "created_at": "2026-03-01 09:59:40+00:00",
                "launched_at": "2026-03-01T10:00:00.000000",
            },
            "timestamp": "2026-03-01 10:00:00.123456",
            "_context_project_id": "6f70aa",
        }
    )


def hostile_message(i: int, huge_bytes: int) -> aio_pika.Message:
    """The ``i``-th hostile message: its kind is ``i`` modulo ``KINDS``."""
    stamp = "2026-03-01 10:00:00.123456"
    if i % OVERSIZED_EVERY == OVERSIZED_EVERY - 1:
        return aio_pika.Message(b"x" * OVERSIZED_BYTES, content_type="application/json")
    kind = i % KINDS
    if kind == 0:  # huge, valid, of a type nothing maps
        inner = {"message_id": f"flood-{i}", "event_type": "hostile.flood", "timestamp": stamp}
        body = _envelope({**inner, "payload": {"junk": "j" * huge_bytes}})
    elif kind == 1:  # huge, no JSON
        body = (b"not json at all; " * (huge_bytes // 17 + 1))[:huge_bytes]
    elif kind == 2:  # deep nesting
        body = b"[" * 50_000 + b"]" * 50_000
    elif kind == 3:  # invalid UTF-8
        body = b'{"event_type": "\xff\xfe\xfd", "payload": "\xc3\x28"}'
    elif kind == 4:  # binary under a wrong content type
        return aio_pika.Message(bytes(range(256)) * 4, content_type="application/x-msgpack")
    elif kind == 5:  # short text, no JSON
        return aio_pika.Message(b"<hello>no json</hello>", content_type="text/xml")
    elif kind == 6:  # a valid envelope whose payload names no resource and no owner
        body = _envelope(
            {
                "message_id": f"flood-{i}",
                "event_type": "compute.instance.create.end",
                "timestamp": stamp,
                "payload": ["not", "an", "object"],
            }
        )
    else:  # a valid envelope, its timestamp of no accepted layout
        body = _envelope(
            {
                "message_id": f"flood-{i}",
                "event_type": "compute.instance.create.end",
                "timestamp": "yesterday",
            }
        )
    return aio_pika.Message(body, content_type="application/json")


def huge_size(hostile: int, megabytes: float) -> int:
    """The size of each huge body that makes the flood about ``megabytes`` in all."""
    oversized = hostile // OVERSIZED_EVERY
    huge = max(1, 2 * hostile // KINDS)
    return max(1000, int((megabytes * 1e6 - oversized * OVERSIZED_BYTES) / huge))


async def publish_flood(url: str, exchange: str, hostile: int, good: int, huge_bytes: int) -> None:
    """Hostile and good messages interleaved, evenly; the good ones' numbers are 0..good-1."""
    every = max(1, hostile // max(good, 1))
    connection = await aio_pika.connect(url)
    async with connection:
        channel = await connection.channel()
        target = await channel.get_exchange(exchange, ensure=False)
        sent_good = 0
        for i in range(hostile):
            await target.publish(hostile_message(i, huge_bytes), routing_key="notifications.info")
            if i % every == 0 and sent_good < good:
                message = aio_pika.Message(good_body(sent_good), content_type="application/json")
                await target.publish(message, routing_key="notifications.info")
                sent_good += 1
        for n in range(sent_good, good):
            message = aio_pika.Message(good_body(n), content_type="application/json")
            await target.publish(message, routing_key="notifications.info")


def publish_in_process(url: str, exchange: str, hostile: int, good: int, huge_bytes: int) -> None:
    anyio.run(publish_flood, url, exchange, hostile, good, huge_bytes)


async def declare(url: str, exchange: str) -> None:
    connection = await aio_pika.connect(url)
    async with connection:
        channel = await connection.channel()
        await channel.declare_exchange(exchange, aio_pika.ExchangeType.TOPIC, durable=False)


# -- the daemon and its watcher --------------------------------------------------------------------------


def metric_sum(text: str, name: str, contains: str = "") -> float:
    """The sum of the samples of ``name`` (any labels) whose line contains ``contains``."""
    total = 0.0
    for line in text.splitlines():
        if (line.startswith(name + "{") or line.startswith(name + " ")) and contains in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def counted(text: str) -> dict[str, float]:
    """What the collector counted of the hostile messages, by counter."""
    return {
        "unparseable": metric_sum(text, "tally_collector_unparseable_total"),
        "skipped_unmapped": metric_sum(text, "tally_collector_skipped_total", 'reason="unmapped"'),
        "owner_missing": metric_sum(text, "tally_collector_owner_missing_total"),
    }


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Watcher:
    """A thread asking ``/healthz`` every 10 ms and noting the daemon's resident memory."""

    def __init__(self, base_url: str, pid: int) -> None:
        self._base_url = base_url
        self._pid = pid
        self.latencies_ms: list[float] = []
        self.rss_mb: list[float] = []
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(base_url=self._base_url, timeout=5) as client:
            n = 0
            while not self._stop.is_set():
                began = time.perf_counter()
                try:
                    ok = client.get("/healthz").status_code == 200
                except httpx.HTTPError:
                    ok = False
                self.latencies_ms.append((time.perf_counter() - began) * 1000)
                self.failures += not ok
                if n % 20 == 0:
                    self.rss_mb.append(rss_mb(self._pid))
                n += 1
                time.sleep(0.01)

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) >= 2 else (values[0] if values else 0.0)


def daemon_env(work: Path, amqp_url: str, exchange: str, queue: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(work),
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
        "TALLY_STATE_DIR": str(work / "state"),
        "TALLY_REPORTING_HTTP_PORT": str(free_port()),
        "TALLY_OSC_AMQP_URL": amqp_url,
        "TALLY_OSC_EXCHANGES": exchange,
        "TALLY_OSC_QUEUE_NAME": queue,
        "TALLY_OSC_CLOUD": "os-flood",
        "TALLY_OSC_FLUSH_INTERVAL_S": "0.2",
        "TALLY_SHUTDOWN_GRACE_S": "5",
    }


def stored(state: Path) -> tuple[int, int]:
    with sqlite3.connect(state / "tally.sqlite3") as db:
        total, distinct = db.execute(
            "SELECT COUNT(*), COUNT(DISTINCT resource_id) FROM events WHERE cloud = 'os-flood'"
        ).fetchone()
    return int(total), int(distinct)


@dataclass
class Bounds:
    rss_growth_mb: float
    healthz_p99_ms: float
    drain_s: float


def start_daemon(
    stack: ExitStack, work: Path, amqp_url: str, exchange: str
) -> tuple[subprocess.Popen[bytes], str]:
    """``tally run`` in ``work`` (its log ``work/tally.log``), its collector on ``exchange``; ready."""
    work.mkdir(parents=True, exist_ok=True)
    anyio.run(declare, amqp_url, exchange)
    env = daemon_env(work, amqp_url, exchange, exchange)
    base_url = f"http://127.0.0.1:{env['TALLY_REPORTING_HTTP_PORT']}"
    log = stack.enter_context((work / "tally.log").open("wb"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tally", "run"], env=env, stdout=subprocess.DEVNULL, stderr=log
    )
    stack.callback(kill_if_running, proc)
    wait_ready(base_url, proc, START_TIMEOUT_S, "tally run")
    return proc, base_url


def drain(report: Report, bounds: Bounds, base_url: str, state: Path, began: float) -> str:
    """Wait until every message is counted or stored; the last metrics text."""
    before = dict(report.counted)
    while True:
        text = httpx.get(f"{base_url}/metrics", timeout=10).text
        now = counted(text)
        report.counted = {k: now[k] - before[k] for k in now}
        report.counted_total = sum(report.counted.values())
        report.stored, report.stored_distinct = stored(state)
        if report.counted_total >= report.hostile and report.stored_distinct >= report.good:
            return text
        if time.monotonic() > began + bounds.drain_s:
            report.problems.append(f"not drained within {bounds.drain_s:g} s")
            return text
        time.sleep(0.2)


def run_flood(report: Report, bounds: Bounds, amqp_url: str, work: Path) -> None:
    """The flood into one daemon, while a control daemon (on an exchange nothing is published to) is
    asked ``/healthz`` the same way: the control's latencies are the host's, under the same load."""
    unique = uuid.uuid4().hex[:8]
    exchange = f"bench-flood-{unique}"
    huge_bytes = huge_size(report.hostile, report.megabytes)
    with ExitStack() as stack:
        proc, base_url = start_daemon(stack, work / "flooded", amqp_url, exchange)
        control, control_url = start_daemon(stack, work / "control", amqp_url, f"bench-control-{unique}")
        with Watcher(base_url, proc.pid) as idle:
            time.sleep(2)
        report.healthz_idle_p99_ms = p99(idle.latencies_ms)
        report.counted = counted(httpx.get(f"{base_url}/metrics", timeout=10).text)
        with Watcher(base_url, proc.pid) as watcher, Watcher(control_url, control.pid) as host:
            began = time.monotonic()
            # In a process of its own: in this one, its hold on the GIL would delay the watcher's probes.
            publisher = multiprocessing.get_context("spawn").Process(
                target=publish_in_process, args=(amqp_url, exchange, report.hostile, report.good, huge_bytes)
            )
            publisher.start()
            publisher.join()
            if publisher.exitcode != 0:
                report.problems.append(f"the publisher exited with {publisher.exitcode}")
            report.published_s = time.monotonic() - began
            text = drain(report, bounds, base_url, work / "flooded" / "state", began)
            report.drained_s = time.monotonic() - began
            report.acked = metric_sum(text, "tally_collector_acked_total")
        latencies = watcher.latencies_ms
        report.healthz_probes = len(latencies)
        report.healthz_p50_ms = statistics.median(latencies) if latencies else 0.0
        report.healthz_p99_ms = p99(latencies)
        report.healthz_max_ms = max(latencies, default=0.0)
        report.control_p99_ms = p99(host.latencies_ms)
        report.control_max_ms = max(host.latencies_ms, default=0.0)
        report.rss_start_mb = idle.rss_mb[0] if idle.rss_mb else 0.0
        report.rss_peak_mb = max(watcher.rss_mb, default=0.0)
        report.rss_end_mb = watcher.rss_mb[-1] if watcher.rss_mb else 0.0
        if watcher.failures:
            report.problems.append(f"{watcher.failures} /healthz probes failed during the flood")
        for daemon in (proc, control):
            daemon.send_signal(signal.SIGTERM)
        report.exit_code = proc.wait(timeout=60)
        control.wait(timeout=60)
    judge(report, bounds, (work / "flooded" / "tally.log").read_text(errors="replace"))


def judge(report: Report, bounds: Bounds, log: str) -> None:
    report.log_bytes = len(log.encode())
    lines = log.splitlines()
    # Each kind's warning, and the words of the line that counts those left out of the log.
    kinds = {
        "unparseable": ("collector: unparseable body", "more unparseable bodies were not logged"),
        "owner_missing": ("collector: no owner in payload", "more events without an owner were not logged"),
        # The API refuses each event without a resource or an owner; the sender warns of it.
        "refused": ("sender: event refused", "more refused events were not logged"),
    }
    expected = {**report.counted, "refused": report.counted.get("owner_missing", 0.0)}
    for kind, (warning, left_out_words) in kinds.items():
        logged = sum(warning in line for line in lines)
        said = [line for line in lines if left_out_words in line]
        left_out = sum(int(line.split(": ", 1)[1].split(" ", 1)[0]) for line in said)
        report.warning_lines += logged + len(said)
        report.left_out_said += len(said)
        if logged + left_out != expected.get(kind, 0):
            report.problems.append(f"{kind}: {logged} logged + {left_out} left out, of {expected.get(kind)}")
    # Each kind: ten a minute, one line a minute counting the rest, and one more at the stop.
    minutes = int(report.drained_s // 60) + 1
    if report.warning_lines > len(kinds) * ((LIMIT_PER_WINDOW + 1) * minutes + 1):
        report.problems.append(
            f"{report.warning_lines} warning lines about bad messages in {minutes} minutes"
        )
    if report.counted_total != report.hostile:
        report.problems.append(f"{report.counted_total:g} hostile messages counted of {report.hostile}")
    if report.acked < report.hostile + report.good:
        report.problems.append(f"{report.acked:g} acked of {report.hostile + report.good}")
    if (report.stored, report.stored_distinct) != (report.good, report.good):
        report.problems.append(
            f"stored {report.stored} events, {report.stored_distinct} distinct, of {report.good}"
        )
    if "actor crashed" in log or "actor restarting" in log or "Traceback" in log:
        report.problems.append("an actor crashed")
    if report.exit_code != 0:
        report.problems.append(f"the drain exited {report.exit_code}")
    if report.rss_peak_mb - report.rss_start_mb > bounds.rss_growth_mb:
        report.problems.append(
            f"resident memory grew {report.rss_peak_mb - report.rss_start_mb:.0f} MB, "
            f"over {bounds.rss_growth_mb:g}"
        )
    if report.healthz_p99_ms > bounds.healthz_p99_ms:
        report.problems.append(
            f"/healthz p99 {report.healthz_p99_ms:.1f} ms, over {bounds.healthz_p99_ms:g} ms"
        )


def print_report(report: Report) -> None:
    r = report
    print(
        f"{r.hostile} hostile messages ({r.megabytes:g} MB) and {r.good} good ones, load {r.load_average:.1f}"
    )
    print(f"published in {r.published_s:.1f} s, all counted and stored after {r.drained_s:.1f} s")
    print(f"counted {r.counted} = {r.counted_total:g}; acked {r.acked:g}")
    print(f"stored {r.stored} events, {r.stored_distinct} distinct")
    print(f"/healthz idle: p99 {r.healthz_idle_p99_ms:.1f} ms")
    print(
        f"/healthz during the flood: p50 {r.healthz_p50_ms:.1f} ms, p99 {r.healthz_p99_ms:.1f} ms, "
        f"max {r.healthz_max_ms:.1f} ms ({r.healthz_probes} probes)"
    )
    print(f"/healthz of the control meanwhile: p99 {r.control_p99_ms:.1f} ms, max {r.control_max_ms:.1f} ms")
    print(f"RSS {r.rss_start_mb:.0f} MB at the start, peak {r.rss_peak_mb:.0f}, end {r.rss_end_mb:.0f}")
    print(f"warning lines about bad messages {r.warning_lines} ({r.left_out_said} counting those left out)")
    print(f"the whole log {r.log_bytes} bytes; exit code {r.exit_code}")
    for problem in r.problems:
        print(f"PROBLEM {problem}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--quick", action="store_true", help="the suite's size: 3,000 hostile, 30 MB, 300 good"
    )
    parser.add_argument("-n", "--hostile", type=int)
    parser.add_argument("--good", type=int)
    parser.add_argument("--mb", type=float)
    parser.add_argument("--broker", default=AMQP, help="the broker; the run makes a vhost of its own on it")
    parser.add_argument("--max-rss-growth-mb", type=float, default=150.0)
    parser.add_argument("--max-healthz-p99-ms", type=float, default=250.0)
    parser.add_argument("--report", type=Path)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args(argv)
    hostile, good, megabytes = (3000, 300, 30.0) if args.quick else (10_000, 1000, 300.0)
    report = Report(
        hostile=args.hostile or hostile,
        good=args.good if args.good is not None else good,
        megabytes=args.mb or megabytes,
        load_average=os.getloadavg()[0],
    )
    bounds = Bounds(args.max_rss_growth_mb, args.max_healthz_p99_ms, drain_s=60 + report.hostile / 50)
    with ExitStack() as stack:
        work = args.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tally-flood-")))
        work.mkdir(parents=True, exist_ok=True)
        amqp_url = stack.enter_context(own_vhost(args.broker))
        run_flood(report, bounds, amqp_url, work)
    print_report(report)
    if args.report:
        args.report.write_text(json.dumps(asdict(report), indent=2))
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
