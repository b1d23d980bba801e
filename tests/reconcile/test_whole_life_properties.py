"""A whole life the bus missed against its held-back create, through the real diff, booking, ingest
pipeline and fold: whichever arrives first, however often, the life is the one nova reports."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tally.core import Interval, ResourceKey, deterministic_event_id, format_instant, lifecycle
from tally.ingest import IngestPipeline
from tally.reconcile import DeletedResource, Observation
from tally.reconcile.rules import diff, event_of
from tally.store import Store, open_store

pytestmark = pytest.mark.anyio

CLOUD = "os-prop"
KEY = ResourceKey(CLOUD, "instance", "ci-1")
SIZE = {"vcpus": 2, "ram_gb": 4, "disk_gb": 20, "flavor": "ci.medium"}
LAUNCH = datetime(2026, 7, 10, 12, 0, 40, tzinfo=UTC)
GONE = datetime(2026, 7, 10, 12, 25, tzinfo=UTC)


def held_back_create() -> dict[str, Any]:
    return {
        "event_id": deterministic_event_id("openstack", CLOUD, KEY.resource_id, "create.end", LAUNCH),
        "timestamp": format_instant(LAUNCH),
        "event_type": "compute.instance.create.end",
        "platform": "openstack",
        "cloud": CLOUD,
        "resource_type": "instance",
        "resource_id": KEY.resource_id,
        "project_id": "p-ci",
        "payload": {"state": "active", "size": SIZE},
    }


async def run_sync(store: Store, pipeline: IngestPipeline, run: int, poll_at: datetime) -> None:
    """One run's diff of nova's deleted listing against the rows the store holds, booked as a run books."""
    deleted = DeletedResource("instance", KEY.resource_id, "p-ci", GONE, LAUNCH, "active", SIZE)
    observation = Observation((), (deleted,), frozenset({"instance"}), frozenset())
    rows = await store.sync_rows(CLOUD, "instance")
    plan = diff(observation, rows, poll_at=poll_at, settle_s=60)
    items = [
        event_of(c, sync_run_id=f"run-{run}", cloud=CLOUD, platform="openstack") for c in plan.corrections
    ]
    if items:
        assert (await pipeline.ingest(items, source="reconciliation")).rejected == []
        retried = await pipeline.ingest(items[::-1], source="reconciliation")  # a retried booking
        assert retried.accepted == 0 and retried.duplicates == len(items)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(st.sampled_from(["create", "sync"]), min_size=1, max_size=6).filter(lambda s: "sync" in s),
)
async def test_whole_life_and_held_back_create_in_any_order_give_one_life(steps: list[str]) -> None:
    async with open_store("sqlite:///:memory:") as store:
        await store.migrate_up()
        pipeline = IngestPipeline(store, require_size_schema=False)
        for run, step in enumerate(steps):
            if step == "create":
                assert (await pipeline.ingest([held_back_create()])).rejected == []
            else:
                await run_sync(store, pipeline, run, GONE + timedelta(minutes=35 + 60 * run))
        events = await store.lifecycle_events(KEY)
        assert lifecycle(events).intervals == (Interval(LAUNCH, GONE, "active", SIZE, "p-ci"),)
        row = await store.get_resource(KEY)
        assert row is not None and not row.is_live and row.deleted_at == GONE
        # one create of the whole life and one delete, whatever the number of runs: a later run skips
        # the deleted row, and a repeated create is a duplicate
        sync_events = [e.event.event_type for e in events if e.event.source == "reconciliation"]
        assert sync_events.count("sync.delete") == 1
        assert sync_events.count("sync.create") == (1 if steps.index("sync") < _first(steps, "create") else 0)


def _first(steps: list[str], step: str) -> int:
    return steps.index(step) if step in steps else len(steps)
