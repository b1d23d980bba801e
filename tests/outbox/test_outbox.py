"""The outbox file: unique event ids, depth, order, persistence across reopen."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from tally.outbox import open_outbox

pytestmark = pytest.mark.anyio


async def test_redelivery_is_one_row_and_depth_is_counted(tmp_path: Path) -> None:
    async with open_outbox(tmp_path / "o.sqlite3") as outbox:
        assert await outbox.add([("e1", b"{}"), ("e2", b"{}"), ("e1", b"{}")]) == 2
        assert await outbox.add([("e2", b"{}"), ("e3", b"{}")]) == 1
        assert outbox.depth == 3
        assert REGISTRY.get_sample_value("tally_collector_outbox_depth") == 3
        rows = await outbox.peek(10)
        assert [r.event_id for r in rows] == ["e1", "e2", "e3"]
        assert await outbox.remove([rows[0].seq]) == 1
        assert outbox.depth == 2
        assert outbox.statistics().oldest_enqueued_at is not None
        assert REGISTRY.get_sample_value("tally_collector_outbox_oldest_age_seconds") is not None


async def test_committed_rows_survive_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "o.sqlite3"
    async with open_outbox(path) as outbox:
        await outbox.add([("e1", b'{"a":1}'), ("e2", b'{"a":2}')])
    async with open_outbox(path) as outbox:
        assert outbox.depth == 2
        rows = await outbox.peek(1)
        assert rows[0].event_id == "e1" and rows[0].body == b'{"a":1}'
        await outbox.remove([r.seq for r in await outbox.peek(5)])
        assert outbox.depth == 0
        assert outbox.statistics().oldest_enqueued_at is None
    assert (path.parent / "o.sqlite3-wal").exists() or path.exists()
