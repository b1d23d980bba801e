"""End to end: a small month through ``tally simulate --factor 0``, every fault on, the comparison passing.

On the embedded defaults (SQLite, in-process bus) and on PostgreSQL with RabbitMQ. A small month is
two days of a 0.3-scale world (one tenant of each kind); pre-existing and missing-create cannot be
combined, so the SQLite run has missing-create and the PostgreSQL run pre-existing.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import aio_pika
import anyio
import orjson
import pytest

from tally.cli import main

SMALL = ["--seed", "1", "--period", "2026-07", "--scale", "0.3", "--days", "2", "--factor", "0"]
COMMON_FAULTS = "duplicates,reordering,refused-shapes,held-back,missing-delete,lost-update"


def test_simulate_sqlite_in_process_bus_passes_with_every_fault(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.html"
    state = tmp_path / "state"
    out = tmp_path / "month"
    code = main(
        [
            "simulate",
            *SMALL,
            "--faults",
            f"missing-create,{COMMON_FAULTS}",
            "--state-dir",
            str(state),
            "--out",
            str(out),
            "--report",
            str(report),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "tally simulate: passed" in printed
    assert "events accepted / duplicates / rejected" in printed
    html = report.read_text()
    assert html.startswith("<!DOCTYPE html>") and "Comparison passed" in html
    # Resources corrected by a poll-dated sync are drawn (tolerated), oracle against stored.
    assert "<svg" in html and "tolerated: poll-dated update" in html
    assert "Quantity-weighted error" in html

    # The store it leaves behind compares the same way from the command line.
    oracle = out / "oracle.json"
    store_url = f"sqlite:///{state / 'tally.sqlite3'}"
    # It judges by the runs the store records, told the settle window simulate runs with (0).
    judged = ["simulator", "compare", "--oracle", str(oracle), "--store-url", store_url, "--settle", "0"]
    assert main(judged) == 0
    assert "passed" in capsys.readouterr().out

    # The billing path: the month's usage export, taken with tally usage, matches the oracle, and
    # one second more on one line does not.
    assert "usage export passed" in printed and ", 0 off" in printed.split("usage export passed")[1]
    doc = orjson.loads(oracle.read_bytes())
    export = tmp_path / "usage.csv"
    window = ["--from", doc["period_from"], "--to", doc["period_to"], "--cloud", doc["cloud"]]
    assert main(["usage", *window, "--store", store_url, "--out", str(export)]) == 0
    assert main([*judged, "--usage", str(export)]) == 0
    assert "usage export passed" in capsys.readouterr().out
    header, first, *rest = export.read_bytes().decode().split("\r\n")
    cells = first.split(",")
    cells[5] = str(int(cells[5].split(".")[0]) + 1)
    export.write_bytes("\r\n".join([header, ",".join(cells), *rest]).encode())
    assert main([*judged, "--usage", str(export)]) == 1
    assert "export off" in capsys.readouterr().out

    # Another seed's oracle does not match this store: exit 1, and the resources are named.
    other = tmp_path / "other"
    assert main(["simulator", "run", "--seed", "2", *SMALL[2:], "--out", str(other)]) == 0
    capsys.readouterr()
    assert (
        main(["simulator", "compare", "--oracle", str(other / "oracle.json"), "--store-url", store_url]) == 1
    )
    assert "OFF" in capsys.readouterr().out


async def _queue_exists(url: str, name: str) -> bool:
    connection = await aio_pika.connect(url)
    async with connection:
        try:
            await (await connection.channel()).declare_queue(name, passive=True)
        except aio_pika.exceptions.ChannelClosed:
            return False
        return True


def _vhosts() -> list[str]:
    listed = subprocess.run(["rabbitmqctl", "-q", "list_vhosts"], capture_output=True, text=True, check=True)
    return listed.stdout.split()


def test_simulate_postgresql_rabbitmq_passes_with_every_fault(
    tmp_path: Path, pg_url: str, amqp_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    queue_name = f"tally-test-simulate-{uuid.uuid4().hex[:8]}"
    summary = tmp_path / "summary.json"
    code = main(
        [
            "simulate",
            *SMALL,
            "--faults",
            f"pre-existing,{COMMON_FAULTS}",
            "--store-url",
            pg_url,
            "--amqp-url",
            amqp_url,
            "--queue-name",
            queue_name,
            "--state-dir",
            str(tmp_path),
            "--json",
            str(summary),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "tally simulate: passed" in printed
    # The run had a vhost of its own, and removed it (its exchanges and queue with it); nothing of it
    # is left on the vhost the URL names.
    vhost = orjson.loads(summary.read_bytes())["vhost"]
    assert vhost.startswith("tally-simulate-")
    assert vhost not in _vhosts()
    assert not anyio.run(_queue_exists, amqp_url, queue_name, backend="asyncio")


def test_simulator_run_writes_the_month_files_deterministically(tmp_path: Path) -> None:
    args = ["simulator", "run", *SMALL, "--faults", f"missing-create,{COMMON_FAULTS}"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == ["events.jsonl", "held-back.jsonl", "notifications.jsonl", "oracle.json"]
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert orjson.loads((tmp_path / "a" / "oracle.json").read_bytes())["format"] == 4
