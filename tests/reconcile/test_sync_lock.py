"""One run per cloud at a time, across stores (replicas): the lock in the database."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from reconcile_support import T0, builder, events_of, minutes, open_harness

from tally.config import CloudEntry
from tally.ingest import IngestPipeline
from tally.openstack import OpenStackAdapter
from tally.reconcile import Observation, ObserveRequest, Progress, SizeNameEntry, Status
from tally.reconcile._run import RunSettings, run_sync
from tally.reconcile.internals import Adapter, SyncOutcome
from tally.store import Store, open_store

pytestmark = pytest.mark.anyio


def world():  # type: ignore[no-untyped-def]
    b = builder()
    p = b.project("alpha")
    f = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    vt = b.volume_type("ssd")
    ids = [b.instance(p, f, created_at=T0 + minutes(i)).build().resource_id for i in range(5)]
    ids += [b.volume(p, vt, size_gb=1, created_at=T0 + minutes(i)).build().resource_id for i in range(5)]
    return b.build()


async def test_a_held_lock_answers_lock_held_and_writes_no_row(store: Store, tmp_path: Path) -> None:
    async with open_harness(world(), store, tmp_path) as h:
        async with h.store.sync_lock(h.cloud):
            outcome = await h.sync(T0 + minutes(60))
        assert outcome.status is Status.LOCK_HELD and outcome.sync_run_id is None
        assert await h.rows() == {}
        assert await h.store.last_completed_sync_started_at(h.cloud) is None


class Counting:
    """Wraps the real adapter and records how many runs observe at the same time."""

    active = 0
    peak = 0

    def __init__(self, entry: CloudEntry) -> None:
        self._inner: Adapter = OpenStackAdapter(entry)

    async def observe(self, request: ObserveRequest) -> Observation:
        Counting.active += 1
        Counting.peak = max(Counting.peak, Counting.active)
        try:
            await anyio.sleep(0.05)
            return await self._inner.observe(request)
        finally:
            Counting.active -= 1

    async def list_size_names(self, progress: Progress) -> list[SizeNameEntry]:
        return await self._inner.list_size_names(progress)


@pytest.mark.postgres
async def test_fifty_concurrent_triggers_on_two_stores_one_run_at_a_time(pg_url: str, tmp_path: Path) -> None:
    async with open_store(pg_url, max_conns=4) as first, open_store(pg_url, max_conns=4) as second:
        await first.migrate_up()
        async with open_harness(world(), first, tmp_path) as h:
            h.at(T0 + minutes(60))
            pipelines = [
                IngestPipeline(first, require_size_schema=False),
                IngestPipeline(second, require_size_schema=False),
            ]
            stores = [first, second]
            outcomes: list[SyncOutcome] = []

            async def trigger(i: int) -> None:
                outcomes.append(
                    await run_sync(
                        h.entry,
                        store=stores[i % 2],
                        pipeline=pipelines[i % 2],
                        open_adapter=Counting,
                        settings=RunSettings(settle_s=0, budget_s=30),
                        at=T0 + minutes(60),
                    )
                )

            async with anyio.create_task_group() as tg:
                for i in range(50):
                    tg.start_soon(trigger, i)
            statuses = [o.status for o in outcomes]
            assert Status.FAILED not in statuses
            assert statuses.count(Status.COMPLETED) >= 1
            assert statuses.count(Status.COMPLETED) + statuses.count(Status.LOCK_HELD) == 50
            assert Counting.peak == 1
            created = sum(o.stats.get("created", 0) for o in outcomes)
            assert created == 10
            for rtype, rid in await h.rows():
                kinds = [e["event_type"] for e in await events_of(h, rtype, rid)]
                assert kinds == ["sync.create"]
