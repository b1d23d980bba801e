"""The outbox's file lost under the running process (``_lost_file``): deleted, its directory removed,
or replaced. What an ack waits on must outlive the process, so no write commits into an unlinked
file: a deleted file is written back from the open one (nothing lost), a removed directory stops the
writes naming the path until it is back, a replaced file stops them until a restart."""

from __future__ import annotations

import logging
import shutil
import sqlite3
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from tally.outbox import OutboxWriteError, open_outbox

pytestmark = pytest.mark.anyio


def on_disk(path: Path) -> list[str]:
    """The event ids a new process would find at ``path``."""
    with sqlite3.connect(path) as db:
        return sorted(r[0] for r in db.execute("SELECT event_id FROM outbox"))


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def delete(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


async def test_a_deleted_file_is_written_back_before_the_next_write(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "outbox.sqlite3"
    caplog.set_level(logging.INFO, logger="tally.outbox")
    async with open_outbox(path) as outbox:
        await outbox.add([("e0", b"a"), ("e1", b"b")])
        await outbox.remove([1])
        delete(path)
        assert not path.exists()
        assert await outbox.add([("e2", b"c")]) == 1
        assert on_disk(path) == ["e1", "e2"]  # what was committed, and the new row, on the path
        assert outbox.write_problem is None and outbox.depth == 2
        await outbox.remove([r.seq for r in await outbox.peek(10)])
        assert on_disk(path) == []
    [warning] = warnings(caplog)
    assert warning == (
        f"outbox: the file {path} was deleted under the running process; written back from the open "
        "file (1 rows waiting)"
    )


async def test_a_removed_directory_stops_writes_naming_the_path_until_it_is_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "state" / "outbox.sqlite3"
    caplog.set_level(logging.INFO, logger="tally.outbox")
    before = REGISTRY.get_sample_value("tally_collector_outbox_write_errors_total", {"reason": "lost"}) or 0
    async with open_outbox(path) as outbox:
        await outbox.add([("e0", b"a")])
        shutil.rmtree(path.parent)
        for attempt in range(3):
            with pytest.raises(OutboxWriteError) as raised:
                await outbox.add([(f"e{attempt + 1}", b"b")])
            assert raised.value.reason == "lost"
        assert str(raised.value) == (
            f"the outbox cannot write: the file and its directory were removed under the running "
            f"process (No such file or directory) on {path}; recreate the directory: the open file is "
            "written back"
        ), raised.value
        assert await outbox.check_writable(fresh_s=0) is not None
        assert outbox.depth == 1  # nothing of the refused writes counted (nor acked by a consumer)
        after = REGISTRY.get_sample_value("tally_collector_outbox_write_errors_total", {"reason": "lost"})
        assert after == before + 4
        path.parent.mkdir()
        assert await outbox.check_writable(fresh_s=0) is None
        assert await outbox.add([("e9", b"c")]) == 1
        assert on_disk(path) == ["e0", "e9"]
    assert len(warnings(caplog)) == 3, warnings(caplog)  # began, written back, commits again


async def test_a_replaced_file_is_never_written_over(tmp_path: Path) -> None:
    path = tmp_path / "outbox.sqlite3"
    async with open_outbox(path) as outbox:
        await outbox.add([("e0", b"a")])
        delete(path)
        with sqlite3.connect(path) as other:
            other.execute("CREATE TABLE theirs (x)")
        with pytest.raises(OutboxWriteError) as raised:
            await outbox.add([("e1", b"b")])
        assert str(raised.value) == (
            f"the outbox cannot write: another file replaced the one this process opened on {path}; "
            "restart the collector"
        )
    with sqlite3.connect(path) as other:
        assert [r[0] for r in other.execute("SELECT name FROM sqlite_master")] == ["theirs"]
