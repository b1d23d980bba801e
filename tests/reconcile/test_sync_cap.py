"""The cap on concurrent runs and the waits it makes: a slot's wait counts against the budget, and no run
waits for a database connection past it (real stores; the adapter is a fake of the seam's shape)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import UTC, datetime

import anyio
import pytest
from prometheus_client import REGISTRY

from tally.config import CloudEntry
from tally.ingest import IngestPipeline
from tally.reconcile import Observation, ObserveRequest, Progress, SizeNameEntry, Status
from tally.reconcile._run import RunSettings
from tally.reconcile._service import SyncService
from tally.reconcile.internals import Adapter, SyncOutcome
from tally.store import ConnectionWaitTimeout, Store, connection_deadline, open_store

pytestmark = pytest.mark.anyio

AT = datetime(2026, 7, 1, 6, tzinfo=UTC)


class Gated:
    """An adapter whose observation waits ``hold_s`` (or, deaf to its budget, until ``gate`` is set: a
    run stuck past its budget) and sees an empty cloud; it records how many observe at once."""

    active = 0
    peak = 0

    def __init__(self, hold_s: float, gate: anyio.Event | None = None) -> None:
        self._hold_s = hold_s
        self._gate = gate

    def __call__(self, entry: CloudEntry) -> Adapter:
        return self

    async def observe(self, request: ObserveRequest) -> Observation:
        Gated.active += 1
        Gated.peak = max(Gated.peak, Gated.active)
        try:
            if self._gate is not None:
                with anyio.CancelScope(shield=True):
                    await self._gate.wait()
            else:
                await anyio.sleep(self._hold_s)
        finally:
            Gated.active -= 1
        return Observation((), (), frozenset(), frozenset())

    async def list_size_names(self, progress: Progress) -> list[SizeNameEntry]:
        return []


def service(
    store: Store, clouds: list[str], adapter: Callable[[CloudEntry], Adapter], *, cap: int, budget_s: float
) -> SyncService:
    entries = [CloudEntry(c, "openstack", "openstack", {"os_cloud": "admin"}, 600) for c in clouds]
    return SyncService(
        entries,
        store=store,
        pipeline=IngestPipeline(store, require_size_schema=False),
        settings=RunSettings(settle_s=0, budget_s=budget_s),
        open_adapter=adapter,
        max_concurrent=cap,
    )


def sample(name: str, labels: dict[str, str] | None = None) -> float:
    return REGISTRY.get_sample_value(name, labels or {}) or 0.0


def unique(prefix: str) -> str:
    return f"{prefix}-{time.monotonic_ns()}"


async def test_runs_beyond_the_cap_wait_and_never_run_more_at_once(store: Store) -> None:
    clouds = [unique(f"cap{i}") for i in range(6)]
    svc = service(store, clouds, Gated(0.2), cap=2, budget_s=30)
    Gated.peak = 0
    outcomes: list[SyncOutcome] = []

    async def one(cloud: str) -> None:
        outcomes.append(await svc.run_cloud(cloud, AT))

    async with anyio.create_task_group() as tg:
        for cloud in clouds:
            tg.start_soon(one, cloud)
    assert [o.status for o in outcomes] == [Status.COMPLETED] * 6
    assert Gated.peak == 2
    assert sample("tally_sync_runs_in_progress") == 0
    assert sample("tally_sync_max_concurrent") == 2


async def test_a_run_that_gets_no_slot_within_its_budget_does_not_start(store: Store) -> None:
    holder, waiter = unique("holder"), unique("waiter")
    gate = anyio.Event()
    svc = service(store, [holder, waiter], Gated(0, gate), cap=1, budget_s=1)
    before = sample("tally_sync_waits_exceeded_total", {"wait": "slot"})
    async with anyio.create_task_group() as tg:
        tg.start_soon(svc.run_cloud, holder, AT)
        await anyio.sleep(0.2)
        began = time.monotonic()
        outcome = await svc.run_cloud(waiter, AT)
        waited = time.monotonic() - began
        gate.set()
    assert outcome.status is Status.NOT_STARTED and outcome.sync_run_id is None
    assert outcome.stats["errors"] == [
        "waited the whole budget of 1 s for a sync slot: "
        "all 1 of TALLY_REPORTING_SYNC_MAX_CONCURRENT were running"
    ]
    assert 0.9 <= waited < 2.0
    assert await store.list_sync_runs(waiter) == []  # no row: the run never began
    assert sample("tally_sync_waits_exceeded_total", {"wait": "slot"}) == before + 1
    health = (await svc.readiness_check()).clouds[waiter]
    assert health["failing"] is True and "sync slot" in str(health["last_error"])
    assert health["last_error_run"] is None
    assert sample("tally_sync_last_error_timestamp_seconds", {"cloud": waiter}) > 0


async def test_the_wait_for_a_slot_counts_against_the_budget(store: Store) -> None:
    # Budget 1.5 s; the first run holds the only slot 1 s, so the second has 0.5 s left for an
    # observation of 1 s: it starts, and ends failed at its budget, with a row saying so.
    first, second = unique("first"), unique("second")
    svc = service(store, [first, second], Gated(1.0), cap=1, budget_s=1.5)
    outcomes: dict[str, SyncOutcome] = {}

    async def one(cloud: str) -> None:
        outcomes[cloud] = await svc.run_cloud(cloud, AT)

    async with anyio.create_task_group() as tg:
        tg.start_soon(one, first)
        await anyio.sleep(0.05)
        tg.start_soon(one, second)
    assert outcomes[first].status is Status.COMPLETED
    assert outcomes[second].status is Status.FAILED
    assert any("context deadline exceeded" in e for e in outcomes[second].stats["errors"])
    [row] = await store.list_sync_runs(second)
    assert row["status"] == "failed"
    ready = await svc.readiness_check()
    assert ready.ready and f"1 failing: {second}" in ready.detail
    assert ready.clouds[first]["failing"] is False and ready.clouds[first]["last_completed_run"]


@pytest.mark.postgres
async def test_no_run_waits_for_a_pooled_connection_past_its_budget(shared_pg_url: str) -> None:
    cloud = unique("pool")
    async with open_store(shared_pg_url, max_conns=1) as store:
        svc = service(store, [cloud], Gated(0), cap=1, budget_s=1)
        timeouts = sample("tally_db_connection_wait_timeouts_total")
        # An ingest batch holds the pool's one connection for as long as its block lasts.
        async with store.open_batch([]):
            with connection_deadline(time.monotonic() + 0.3), pytest.raises(ConnectionWaitTimeout) as raised:
                await store.list_sync_runs(cloud)
            began = time.monotonic()
            outcome = await svc.run_cloud(cloud, AT)
            waited = time.monotonic() - began
        assert "all 1 of TALLY_REPORTING_DB_MAX_CONNS in use" in str(raised.value)
        assert outcome.status is Status.NOT_STARTED
        [reason] = outcome.stats["errors"]
        # What is left of the 1 s budget once the lock is taken (its own connection, outside the pool).
        assert re.match(
            r"no database connection within the budget: waited (0\.[5-9]|1\.0) s for a database connection",
            reason,
        ), reason
        assert waited < 1.8
        assert sample("tally_db_connection_wait_timeouts_total") == timeouts + 2
        # With the connection back, the next run completes and the cloud is healthy again.
        assert (await svc.run_cloud(cloud, AT)).status is Status.COMPLETED
        assert (await svc.readiness_check()).clouds[cloud]["failing"] is False
