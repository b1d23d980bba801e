"""A delete by absence dated at the earliest poll that proves the resource gone, against the fake cloud
over HTTP, on SQLite and PostgreSQL (beyond the reference, which dates it at the poll that found it)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from reconcile_support import T0, Harness, builder, collector_event, events_of, minutes, open_harness

from tally.core import ResourceKey, format_instant, parse_instant
from tally.reconcile import Status
from tally.reconcile._record_reads import RUNS_PAGE, runs_until_held
from tally.reconcile._run import RunStats
from tally.store import Store, SyncReceipts

pytestmark = pytest.mark.anyio


async def deliver_create(h: Harness, resource_id: str, project_id: str, at_minute: float) -> None:
    create = collector_event(
        h,
        "volume",
        resource_id,
        "volume.create.end",
        T0 + minutes(at_minute),
        project_id=project_id,
        state="available",
        size={"size_gb": 5, "type": "ssd"},
    )
    await h.pipeline.ingest([create])


async def test_a_delete_by_absence_is_dated_at_the_first_run_after_creation_plus_settle(
    store: Store, tmp_path: Path
) -> None:
    b = builder()
    p = b.project("alpha")
    vt = b.volume_type("ssd")
    short = b.volume(p, vt, size_gb=5, created_at=T0 + minutes(10)).terminate(T0 + minutes(20)).build()
    async with open_harness(b.build(), store, tmp_path, settle_s=60) as h:
        before = await h.sync(T0 + minutes(5))  # before the volume existed: proves nothing
        first = await h.sync(T0 + minutes(30))  # created, deleted, and no row: the earliest proof
        second = await h.sync(T0 + minutes(90))
        assert {before.status, first.status, second.status} == {Status.COMPLETED}
        assert "rows_read_through" in first.stats and "volume" in first.stats["complete_types"]
        # the create notification was held back; the delete was lost
        await deliver_create(h, short.resource_id, p.id, 10)
        finding = await h.sync(T0 + minutes(150))
        assert finding.stats["deleted"] == 1
        create, delete = await events_of(h, "volume", short.resource_id)
        assert create["event_type"] == "volume.create.end" and delete["event_type"] == "sync.delete"
        assert parse_instant(delete["timestamp"]) == T0 + minutes(30)
        assert delete["payload"]["provider"] == {
            "reason": "absent from a complete listing",
            "sync_run_id": finding.sync_run_id,
        }
        row = (await h.rows())[("volume", short.resource_id)]
        assert not row.is_live and row.deleted_at == T0 + minutes(30)


async def test_a_run_incomplete_for_the_type_or_holding_the_row_proves_nothing(
    store: Store, tmp_path: Path
) -> None:
    b = builder()
    p = b.project("alpha")
    vt = b.volume_type("ssd")
    late = b.volume(p, vt, size_gb=5, created_at=T0 + minutes(10)).terminate(T0 + minutes(20)).build()
    held = b.volume(p, vt, size_gb=5, created_at=T0 + minutes(10)).terminate(T0 + minutes(70)).build()
    async with open_harness(b.build(), store, tmp_path, settle_s=60) as h:
        await deliver_create(h, held.resource_id, p.id, 10)
        h.state.faults.down.add("block-storage")
        down = await h.sync(T0 + minutes(30))  # cinder down: it cannot tell that the short volume is gone
        assert down.status is Status.FAILED and "volume" not in down.stats["complete_types"]
        h.state.faults.down.discard("block-storage")
        # lists the long volume alive, matching its row (no trace), and the short one not at all
        listing = await h.sync(T0 + minutes(60))
        assert listing.status is Status.COMPLETED and listing.stats["deleted"] == 0
        await deliver_create(h, late.resource_id, p.id, 10)
        finding = await h.sync(T0 + minutes(90))
        assert finding.status is Status.COMPLETED and finding.stats["deleted"] == 2
        dated = {}
        for volume in (late, held):
            delete = (await events_of(h, "volume", volume.resource_id))[-1]
            assert delete["event_type"] == "sync.delete"
            dated[volume.resource_id] = parse_instant(delete["timestamp"])
        assert dated[late.resource_id] == T0 + minutes(60)
        assert dated[held.resource_id] == T0 + minutes(90)  # never before the listing that named it


async def test_the_runs_are_read_a_page_at_a_time_up_to_the_first_that_held_the_rows(store: Store) -> None:
    cloud = f"os-pages-{uuid.uuid4().hex[:8]}"
    received = T0 + minutes(70)  # the row's first event: runs up to the 70th read before it
    for n in range(1, 3 * RUNS_PAGE + 1):
        run_id = await store.start_sync_run(cloud, T0 + minutes(n))
        through = T0 + minutes(n)
        stats = RunStats(complete_types=["volume"], rows_read=True, rows_read_through=through).to_json()
        await store.finish_sync_run(run_id, "completed", stats)
    receipts = {ResourceKey(cloud, "volume", "vol-1"): SyncReceipts(received, frozenset())}
    runs = await runs_until_held(store, cloud, T0, T0 + minutes(500), receipts)
    # the first page held no row; the second ends with a run that held it, so the third is not read
    assert len(runs) == 2 * RUNS_PAGE
    assert [r.started_at for r in runs] == [T0 + minutes(n) for n in range(1, 2 * RUNS_PAGE + 1)]
    assert format_instant(runs[0].rows_through or T0) == format_instant(T0 + minutes(1))
    everything = await runs_until_held(
        store,
        cloud,
        T0,
        T0 + minutes(500),
        {ResourceKey(cloud, "volume", "vol-2"): SyncReceipts(T0 + minutes(999), frozenset())},
    )
    assert len(everything) == 3 * RUNS_PAGE
