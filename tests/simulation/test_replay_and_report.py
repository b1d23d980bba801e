"""``tally simulator replay`` on RabbitMQ, its broken-line refusal, and the HTML report of a comparison."""

from __future__ import annotations

import itertools
import re
import sys
import uuid
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import aio_pika
import anyio
import orjson
import pytest

from tally.cli import main
from tally.core import Event, StoredEvent
from tally.simulation.report import render_report, write_report
from tally.simulator import compare, generate_month, write_month
from tally.simulator.compare import StoredRecord
from tally.simulator.oracle import OracleResource


def month_files(tmp_path: Path) -> Path:
    month = generate_month(1, "2026-07", scale=0.3, days=1, faults="refused-shapes")
    write_month(month, tmp_path / "month")
    return tmp_path / "month" / "notifications.jsonl"


def test_a_broken_line_is_named_and_nothing_is_published(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = month_files(tmp_path)
    lines = path.read_bytes().splitlines()
    lines.insert(6, b'{"exchange": "nova", "routing_key": "notifications.info", "body": ')
    path.write_bytes(b"\n".join(lines) + b"\n")
    # An unreachable broker proves nothing was attempted: the file is refused before connecting.
    monkeypatch.setenv("TALLY_SIM_AMQP_URL", "amqp://guest:guest@127.0.0.1:1/")
    assert main(["simulator", "replay", "--in", str(path)]) == 2
    err = capsys.readouterr().err
    assert "line 7: not JSON" in err and err.count("\n") == 1


def test_replay_puts_the_file_on_rabbitmq_again(
    tmp_path: Path, amqp_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = month_files(tmp_path)
    expected = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    on_nova = [e for e in expected if e["exchange"] == "nova"]
    monkeypatch.setenv("TALLY_SIM_AMQP_URL", amqp_url)
    queue_name = f"tally-test-replay-{uuid.uuid4().hex[:8]}"

    async def run() -> list[bytes]:
        connection = await aio_pika.connect(amqp_url)
        try:
            channel = await connection.channel()
            await channel.declare_exchange("nova", aio_pika.ExchangeType.TOPIC, durable=False)
            queue = await channel.declare_queue(queue_name, auto_delete=True)
            await queue.bind("nova", routing_key="notifications.info")
            assert await anyio.to_thread.run_sync(main, ["simulator", "replay", "--in", str(path)]) == 0
            bodies: list[bytes] = []
            with anyio.fail_after(15):
                while len(bodies) < len(on_nova):
                    message = await queue.get(no_ack=True, fail=False)
                    if message is None:
                        await anyio.sleep(0.05)
                        continue
                    bodies.append(message.body)
            return bodies
        finally:
            # auto_delete needs a consumer to leave; a queue read with basic.get must be deleted.
            await (await connection.channel()).queue_delete(queue_name)
            await connection.close()

    bodies = anyio.run(run)
    want = [e["body"].encode() if isinstance(e["body"], str) else orjson.dumps(e["body"]) for e in on_nova]
    assert bodies == want
    # Progress with an ETA, the last line once every notification is confirmed.
    progress = [line for line in capsys.readouterr().err.splitlines() if line.startswith("replay published=")]
    assert progress[-1] == f"replay published={len(expected)}/{len(expected)} eta=0:00"


def _history(r: OracleResource, cloud: str, *, end_late: timedelta = timedelta(0)) -> tuple[StoredEvent, ...]:
    """The collector events that fold into the oracle's intervals of one resource."""
    out = []
    for n, i in enumerate(r.intervals):
        kind = f"{r.resource_type}.create.end" if n == 0 else f"{r.resource_type}.update"
        payload = {"state": i.state, "size": dict(i.size)}
        event = Event(
            f"{r.resource_id}-{n}",
            i.start,
            kind,
            "openstack",
            cloud,
            r.resource_type,
            r.resource_id,
            i.project_id,
            payload=payload,
        )
        out.append(StoredEvent(event, i.start))
    last = r.intervals[-1]
    at = last.end + end_late
    gone = Event(
        f"{r.resource_id}-end",
        at,
        f"{r.resource_type}.delete.end",
        "openstack",
        cloud,
        r.resource_type,
        r.resource_id,
        last.project_id,
    )
    return (*out, StoredEvent(gone, at))


def test_report_draws_every_differing_resource_oracle_against_stored(tmp_path: Path) -> None:
    month = generate_month(1, "2026-07", scale=0.3, days=4)
    victim = next(
        r
        for r in month.oracle.resources
        if len(r.intervals) == 1 and r.intervals[0].end < month.period_to - timedelta(hours=3)
    )
    # A resource whose third interval is a resize (same state, another size), stored 40 s late.
    resized = next(
        r
        for r in month.oracle.resources
        if len(r.intervals) >= 3
        and r.intervals[1].state == r.intervals[2].state
        and r.intervals[1].size != r.intervals[2].size
    )
    histories = {}
    for r in month.oracle.resources:
        history = list(_history(r, month.cloud, end_late=timedelta(hours=3) if r is victim else timedelta(0)))
        if r is resized:
            late = replace(history[2].event, timestamp=history[2].event.timestamp + timedelta(seconds=40))
            history[2] = StoredEvent(late, late.timestamp)
        histories[(r.resource_type, r.resource_id)] = tuple(history)
    record = StoredRecord(histories)
    comparison = compare(month.oracle, record, settle=timedelta(0))
    stored = record.intervals()
    document = render_report(comparison, month.oracle, stored, title="seed 1", summary=[("faults", "none")])
    path = tmp_path / "report.html"
    write_report(path, document)
    text = path.read_text()
    assert "Comparison FAILED" in text
    assert victim.resource_id in text and resized.resource_id in text
    assert text.count("<svg") == len(comparison.resources) == 2
    # A delete three hours late, by no correction: off, and weighed in the quantities table.
    assert "off: delete late" in text and "Quantity-weighted error" in text
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "<script" not in text
    for svg in re.findall(r"<svg.*?</svg>", text, re.DOTALL):
        # Every differing span is drawn wide enough to see, even the 40 s one in a four-day life.
        spans = re.findall(r'<rect x="[\d.]+" y="4" width="([\d.]+)"', svg)
        assert spans and all(float(w) >= 36 for w in spans)
        # Axis labels never overlap: 100 px apart at least.
        xs = [
            float(x) for x in re.findall(r'<text x="([\d.]+)" y="\d+" text-anchor="\w+" class="axis">', svg)
        ]
        assert len(xs) >= 2 and all(b - a >= 100 for a, b in itertools.pairwise(xs))
    resized_svg = re.search(rf"{resized.resource_id}.*?</svg>", text, re.DOTALL)
    assert resized_svg and 'class="resize"' in resized_svg.group(0)
    # Drawn over its own life: the victim's axis starts at its creation, not at the month's start.
    victim_svg = re.search(rf"{victim.resource_id}.*?</svg>", text, re.DOTALL)
    assert victim_svg and f"{victim.intervals[0].start:%m-%d %H:%M:%S}" in victim_svg.group(0)


def test_simulator_run_publishes_the_month_to_rabbitmq(
    amqp_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    month = generate_month(1, "2026-07", scale=0.3, days=1)
    on_neutron = [n for n in month.notifications if n.exchange == "neutron"]
    monkeypatch.setenv("TALLY_SIM_AMQP_URL", amqp_url)
    monkeypatch.setenv("TALLY_SIM_HTTP_PORT", "0")
    queue_name = f"tally-test-run-{uuid.uuid4().hex[:8]}"
    printed: list[str] = []

    async def run() -> list[str]:
        connection = await aio_pika.connect(amqp_url)
        try:
            channel = await connection.channel()
            await channel.declare_exchange("neutron", aio_pika.ExchangeType.TOPIC, durable=False)
            queue = await channel.declare_queue(queue_name, auto_delete=True)
            await queue.bind("neutron", routing_key="notifications.info")
            argv = [
                "simulator",
                "run",
                "--period",
                "2026-07",
                "--scale",
                "0.3",
                "--days",
                "1",
                "--factor",
                "0",
            ]
            # A process of its own: the run installs signal handlers, which only a main thread can.
            done = await anyio.run_process([sys.executable, "-m", "tally", *argv], check=False)
            assert done.returncode == 0, done.stderr.decode()[-2000:]
            printed.append(done.stdout.decode())
            ids: list[str] = []
            with anyio.fail_after(15):
                while len(ids) < len(on_neutron):
                    message = await queue.get(no_ack=True, fail=False)
                    if message is None:
                        await anyio.sleep(0.05)
                        continue
                    ids.append(orjson.loads(orjson.loads(message.body)["oslo.message"])["message_id"])
            return ids
        finally:
            await (await connection.channel()).queue_delete(queue_name)
            await connection.close()

    assert anyio.run(run) == [n.message_id for n in on_neutron]
    assert f"published {len(month.notifications)} of {len(month.notifications)}" in printed[0]
