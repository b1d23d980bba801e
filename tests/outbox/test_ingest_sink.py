"""The in-process sink: this daemon's ingest pipeline over a real SQLite store."""

from __future__ import annotations

from pathlib import Path

import pytest
from outbox_support import volume_event

from tally.ingest import IngestPipeline
from tally.outbox import IngestSink
from tally.outbox.internals import DeliveryStatus
from tally.store import open_store

pytestmark = pytest.mark.anyio


async def test_accepts_counts_duplicates_and_refusals(tmp_path: Path) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'store.sqlite3'}") as store:
        await store.migrate_up()
        sink = IngestSink(IngestPipeline(store, require_size_schema=False))
        first = await sink.deliver(
            [volume_event(1), volume_event(2), volume_event(3, payload={"state": "available"})]
        )
        assert first.status is DeliveryStatus.ACCEPTED
        assert (first.accepted, first.duplicates) == (2, 0)
        assert [(r.event_id, r.reason) for r in first.refused] == [
            ("ev-3", "schema: payload.size is required on create")
        ]
        again = await sink.deliver([volume_event(1), volume_event(2)])
        assert (again.status, again.accepted, again.duplicates) == (DeliveryStatus.ACCEPTED, 0, 2)


async def test_a_batch_over_the_limit_is_too_large(tmp_path: Path) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'store.sqlite3'}") as store:
        await store.migrate_up()
        sink = IngestSink(IngestPipeline(store, require_size_schema=False))
        result = await sink.deliver([volume_event(n) for n in range(1001)])
        assert result.status is DeliveryStatus.TOO_LARGE
