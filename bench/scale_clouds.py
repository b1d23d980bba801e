"""Benchmark: many clouds in one daemon: every cloud completes every interval, under the cap.

Fifty fake OpenStack clouds of different sizes (geometric, 100 to 10,000 resources by default: instances,
volumes, floating IPs and images; ``--quick`` 10 to 300) are served by one process of their own, one
port each; one ``tally run`` on a fresh PostgreSQL database syncs them all on one interval (600 s by
default, ``--quick`` 20 s) with its default cap (half of ``TALLY_REPORTING_DB_MAX_CONNS``) and budget.
After ``--intervals`` intervals (2, ``--quick`` 1; plus the jitter and a short tail) the daemon is
stopped and its record read:

- per interval ``k``: how many clouds completed their ``k``-th run (the first runs are staggered over
  the first interval, so a cloud's ``k``-th run is its run of interval ``k``), and the longest gap
  between two completed runs of one cloud, as a share of the interval (at most 1.1 plus a run's
  length: the ±10 % jitter);
- the most runs in progress at once (from the ``sync_runs`` rows), against the cap;
- the wait for a sync slot (the daemon's ``sync started ... slot_wait_s=`` lines): p50, p99, max;
- the waits for a pooled connection (``tally_db_connection_wait_seconds``): how many, over 100 ms, and
  the timeouts, and the runs that did not start.

It exits 0 only if every cloud completed a run in every interval and none failed or waited past its
budget.

    python -m bench.scale_clouds [--quick] [--clouds N] [--interval S] [--intervals K] [--pg ADMIN_URL]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import yaml

T0 = datetime(2026, 7, 1, tzinfo=UTC)
NOW = T0 + timedelta(days=10)  # the fake clouds' frozen virtual instant
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
JITTER = 0.1
TAIL_S = 5.0  # after the last interval: the runs of its end finish
SLOT_WAIT = re.compile(r"sync started cloud=(\S+) .*slot_wait_s=([0-9.]+)")


def sizes(clouds: int, smallest: int, largest: int) -> list[int]:
    """Resources of each cloud: geometric from ``smallest`` to ``largest``."""
    if clouds == 1:
        return [smallest]
    ratio = (largest / smallest) ** (1 / (clouds - 1))
    return [round(smallest * ratio**i) for i in range(clouds)]


def cloud_name(i: int) -> str:
    return f"os-{i:02d}"


# -- the fake clouds' process -------------------------------------------------------------------------


def build_world(name: str, total: int) -> Any:
    from tally.simulator.world import WorldBuilder

    b = WorldBuilder(cloud=name, period_from=T0, period_to=T0 + timedelta(days=31))
    projects = [b.project(f"tenant-{i}") for i in range(5)]
    flavors = [b.flavor(f"m1.f{i}", vcpus=1 + i, ram_mb=2048 * (1 + i), disk_gb=20) for i in range(3)]
    vtypes = [b.volume_type("ssd"), b.volume_type("hdd")]
    span = int((NOW - T0).total_seconds()) - 3600
    for i in range(total):
        p = projects[i % len(projects)]
        at = T0 + timedelta(seconds=(i * 7919) % span)
        kind = i % 4
        if kind == 0:
            b.instance(p, flavors[i % 3], created_at=at)
        elif kind == 1:
            b.volume(p, vtypes[i % 2], size_gb=10 + i % 90, created_at=at)
        elif kind == 2:
            b.floating_ip(p, address=f"10.{i // 65536}.{i // 256 % 256}.{i % 256}", created_at=at)
        else:
            b.image(p, size_bytes=2**20 * (1 + i % 4096), created_at=at)
    return b.build()


def serve_fakes(counts: list[int]) -> None:
    """Serve one fake cloud per count, each on a port of its own; prints ``PORTS [..]`` once all listen."""
    from tally.simulation import serve_fake_cloud
    from tally.simulator.clock import VirtualClock
    from tally.simulator.fakecloud import create_fake_cloud_app

    apps = [
        create_fake_cloud_app(build_world(cloud_name(i), n), VirtualClock(NOW, 0.0))
        for i, n in enumerate(counts)
    ]

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            ports = [await tg.start(serve_fake_cloud, app, "127.0.0.1", 0) for app in apps]
            print("PORTS " + json.dumps(ports), flush=True)

    anyio.run(main)


# -- the orchestration --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_configs(directory: Path, ports: list[int], interval_s: int) -> tuple[Path, Path]:
    from tally.simulator.fakecloud._keystone import admin_cloud_entry

    clouds_yaml = directory / "clouds.yaml"
    clouds_yaml.write_text(
        yaml.safe_dump(
            {
                "clouds": {
                    cloud_name(i): {**admin_cloud_entry(f"http://127.0.0.1:{port}/v3"), "verify": False}
                    for i, port in enumerate(ports)
                }
            }
        )
    )
    config = directory / "tally-clouds.yaml"
    entries = [
        {
            "cloud": cloud_name(i),
            "platform": "openstack",
            "adapter": "openstack",
            "adapter_config": {"os_cloud": cloud_name(i)},
            "sync_interval_s": interval_s,
        }
        for i in range(len(ports))
    ]
    config.write_text(yaml.safe_dump({"clouds": entries}))
    return clouds_yaml, config


@dataclass(frozen=True)
class Run:
    cloud: str
    status: str
    started_at: datetime
    completed_at: datetime | None


def read_runs(db_url: str) -> list[Run]:
    import psycopg

    with psycopg.connect(db_url) as conn:
        rows = conn.execute(
            "SELECT cloud, status, started_at, completed_at FROM sync_runs ORDER BY started_at"
        ).fetchall()
    return [Run(*row) for row in rows]


def max_overlap(runs: list[Run]) -> int:
    """The most runs in progress at one instant (a run is in progress from its start to its end)."""
    edges = sorted(
        [(r.started_at, 1) for r in runs if r.completed_at]
        + [(r.completed_at, -1) for r in runs if r.completed_at],
        key=lambda e: (e[0], e[1]),
    )
    peak = current = 0
    for _, step in edges:
        current += step
        peak = max(peak, current)
    return peak


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def metric(text: str, name: str, labels: str = "") -> float:
    for line in text.splitlines():
        if line.startswith(name + labels + " ") or (not labels and line.startswith(name + " ")):
            return float(line.split()[-1])
    return 0.0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small clouds and a 30 s interval")
    parser.add_argument("--clouds", type=int, default=50)
    parser.add_argument("--interval", type=int, default=None, help="sync_interval_s (default 600, quick 30)")
    parser.add_argument(
        "--intervals", type=int, default=None, help="how many intervals to watch (default 2, quick 1)"
    )
    parser.add_argument(
        "--pg", metavar="ADMIN_URL", default=PG_ADMIN, help="the PostgreSQL to create the database on"
    )
    parser.add_argument("--max-conns", type=int, default=10, help="TALLY_REPORTING_DB_MAX_CONNS")
    parser.add_argument("_phase", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    counts = sizes(args.clouds, 10, 300) if args.quick else sizes(args.clouds, 100, 10_000)
    if args._phase:
        serve_fakes(counts)
        return 0
    interval = args.interval if args.interval is not None else (30 if args.quick else 600)
    intervals = args.intervals if args.intervals is not None else (1 if args.quick else 2)
    return orchestrate(counts, interval, intervals, args.pg, args.max_conns, quick=args.quick)


def orchestrate(
    counts: list[int], interval: int, intervals: int, pg_admin: str, max_conns: int, *, quick: bool
) -> int:
    from bench.scratch_db import scratch_database

    began = time.monotonic()
    fakes = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.scale_clouds",
            *(["--quick"] if quick else []),
            "--clouds",
            str(len(counts)),
            "fakes",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    daemon: subprocess.Popen[str] | None = None
    with (
        tempfile.TemporaryDirectory(prefix="tally-bench-clouds-") as tmp,
        scratch_database(pg_admin, "tally_bench_clouds") as (_, db_url),
    ):
        log_path = Path(tmp) / "daemon.log"
        try:
            assert fakes.stdout is not None
            line = fakes.stdout.readline()
            if not line.startswith("PORTS "):
                raise RuntimeError("the fake clouds did not start")
            ports = json.loads(line[len("PORTS ") :])
            print(
                f"{len(ports)} fake clouds up after {time.monotonic() - began:.1f} s: "
                f"{sum(counts)} resources, {counts[0]} to {counts[-1]} per cloud"
            )
            clouds_yaml, config = write_configs(Path(tmp), ports, interval)
            port = free_port()
            env = {
                **os.environ,
                "TALLY_STATE_DIR": str(Path(tmp) / "state"),
                "TALLY_REPORTING_DB_URL": db_url,
                "TALLY_REPORTING_DB_MAX_CONNS": str(max_conns),
                "TALLY_REPORTING_HTTP_PORT": str(port),
                "TALLY_REPORTING_INTERNAL_TOKEN": "bench-internal",
                "TALLY_REPORTING_CLOUDS_CONFIG": str(config),
                "TALLY_REPORTING_SYNC_SETTLE_S": "0",
                "OS_CLIENT_CONFIG_FILE": str(clouds_yaml),
            }
            with log_path.open("w") as log:
                daemon = subprocess.Popen(
                    [sys.executable, "-m", "tally", "run"], env=env, stderr=log, text=True
                )
                base = f"http://127.0.0.1:{port}"
                started = wait_ready(base, daemon)
                watch_s = intervals * interval + (intervals - 1) * JITTER * interval + TAIL_S
                print(
                    f"daemon ready after {time.monotonic() - began:.1f} s; watching {watch_s:.0f} s "
                    f"({intervals} intervals of {interval} s)"
                )
                time.sleep(max(0.0, started + watch_s - time.monotonic()))
                metrics = httpx.get(f"{base}/metrics", timeout=10).text
                stopped_at = datetime.now(UTC)
                daemon.send_signal(signal.SIGTERM)
                daemon.wait(timeout=60)
            runs = read_runs(db_url)
        finally:
            if daemon is not None and daemon.poll() is None:
                daemon.kill()
            fakes.terminate()
            fakes.wait(timeout=30)
        log_text = log_path.read_text()
    return report(counts, interval, intervals, runs, stopped_at, metrics, log_text, time.monotonic() - began)


def wait_ready(base: str, daemon: subprocess.Popen[str]) -> float:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            raise RuntimeError(f"tally run exited with {daemon.returncode}")
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return time.monotonic()
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("tally run was not ready within 120 s")


def report(
    counts: list[int],
    interval: int,
    intervals: int,
    all_runs: list[Run],
    stopped_at: datetime,
    metrics: str,
    log: str,
    took_s: float,
) -> int:
    clouds = [cloud_name(i) for i in range(len(counts))]
    # The runs the stop cut short (recorded failed, "cancelled") are the stop's, not the load's.
    runs = [r for r in all_runs if r.completed_at is not None and r.completed_at < stopped_at]
    cut = len(all_runs) - len(runs)
    completed: dict[str, list[Run]] = {c: [] for c in clouds}
    for run in runs:
        if run.status == "completed":
            completed[run.cloud].append(run)
    failed = sum(1 for r in runs if r.status == "failed")
    print(f"{'interval':<10}{'clouds completed':>18}")
    per_interval = []
    for k in range(intervals):
        done = sum(1 for c in clouds if len(completed[c]) > k)
        per_interval.append(done)
        print(f"{k + 1:<10}{f'{done}/{len(clouds)}':>18}")
    gaps = [
        (b.completed_at - a.completed_at).total_seconds()
        for c in clouds
        for a, b in zip(completed[c], completed[c][1:], strict=False)
        if a.completed_at and b.completed_at
    ]
    longest_gap = max(gaps, default=0.0) / interval
    cap = metric(metrics, "tally_sync_max_concurrent")
    peak = max_overlap(runs)
    waits = [float(m.group(2)) for m in SLOT_WAIT.finditer(log)]
    acquisitions = metric(metrics, "tally_db_connection_wait_seconds_count")
    fast = metric(metrics, "tally_db_connection_wait_seconds_bucket", '{le="0.1"}')
    timeouts = metric(metrics, "tally_db_connection_wait_timeouts_total")
    not_started = metric(metrics, "tally_sync_waits_exceeded_total", '{wait="slot"}') + metric(
        metrics, "tally_sync_waits_exceeded_total", '{wait="connection"}'
    )
    durations = [(r.completed_at - r.started_at).total_seconds() for r in runs if r.completed_at]
    print(
        f"runs: {len(runs)} ({failed} failed, {int(not_started)} not started past their budget; "
        f"{cut} cut short by the stop)"
    )
    print(
        f"run length: p50 {percentile(durations, 0.5):.2f} s, p99 {percentile(durations, 0.99):.2f} s, "
        f"max {max(durations, default=0):.2f} s"
    )
    print(f"longest gap between a cloud's completed runs: {longest_gap:.3f} of the interval")
    print(f"runs in progress at once: at most {peak} (cap {cap:g})")
    print(
        f"slot wait: p50 {percentile(waits, 0.5):.3f} s, p99 {percentile(waits, 0.99):.3f} s, "
        f"max {max(waits, default=0):.3f} s"
    )
    print(
        f"pooled connection waits: {int(acquisitions)} acquisitions, {int(acquisitions - fast)} over 100 ms, "
        f"{int(timeouts)} timed out"
    )
    print(f"wall time: {took_s:.0f} s")
    every = min(per_interval) / len(clouds)
    print(f"RATIO clouds_completed_every_interval={every:.3f}")
    print(f"RATIO peak_concurrent_vs_cap={peak / cap if cap else 0:.3f}")
    print(f"RATIO longest_gap_vs_interval={longest_gap:.3f}")
    ok = every == 1.0 and failed == 0 and not_started == 0 and timeouts == 0 and peak <= cap
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
