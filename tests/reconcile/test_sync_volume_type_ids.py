"""Volume types by id: cinder's notifications carry the type's id, its listing the name. Whatever order
the notification, the type listing and the runs come in, the record names the type from the volume's
first event, and no run books a poll-dated "drift" from the id to the name.

The orders, each a case: the names learnt at the scheduler's start before the create arrives; the
create stored before any listing and a run after it; a run, then a type created in the cloud and a
volume of it before the next run; a later event still carrying the id after the name is known."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import anyio
import pytest
from reconcile_support import T0, Harness, builder, collector_event, minutes, open_harness

from tally.actors import ActorContext
from tally.config import CloudEntry
from tally.core import ResourceKey, lifecycle
from tally.reconcile import Status, SyncService
from tally.reconcile._run import RunSettings
from tally.reconcile._scheduler import run_cloud_scheduler
from tally.simulator.world import World
from tally.store import Store, UsageScope

pytestmark = pytest.mark.anyio

SSD = "5a1f0e3c-2b44-4c8e-9d1a-7f3b2c1d0e01"
CREATED = T0 + minutes(10)
RESIZED = T0 + minutes(70)


def world() -> tuple[World, str, str]:
    """A volume of type ssd created at T0+10 min and extended at T0+70 min; its id and project."""
    b = builder()
    p = b.project("alpha")
    vtype = b.volume_type("ssd", type_id=SSD)
    vol = b.volume(p, vtype, size_gb=10, created_at=CREATED).change(RESIZED, size_gb=20).build()
    return b.build(), vol.resource_id, p.id


def volume_event(h: Harness, vol: str, project: str, event_type: str, at: datetime, size_gb: int) -> dict:  # type: ignore[type-arg]
    return collector_event(
        h,
        "volume",
        vol,
        event_type,
        at,
        project_id=project,
        state="available",
        size={"size_gb": size_gb, "type": SSD},
    )


async def the_record(h: Harness, vol: str) -> list[str]:
    """The type of each interval of the volume's lifecycle, and of each usage fact, as read back."""
    key = ResourceKey(h.cloud, "volume", vol)
    intervals = lifecycle(await h.store.lifecycle_events(key)).intervals
    async with h.store.open_usage_stream(UsageScope(T0, T0 + minutes(24 * 60), cloud=h.cloud)) as batches:
        facts = [f async for batch in batches for k, history in batch if k == key for f in history]
    return [i.size["type"] for i in intervals] + [f[6]["type"] for f in facts if f[6]]


async def no_drift(h: Harness, *runs: datetime) -> None:
    for at in runs:
        outcome = await h.sync(at)
        assert outcome.status is Status.COMPLETED, outcome.stats["errors"]
        assert outcome.stats["updated"] == 0, "a drift from the id to the name was booked"


async def test_create_stored_before_any_listing_is_named_from_its_first_second(
    store: Store, tmp_path: Path
) -> None:
    w, vol, project = world()
    async with open_harness(w, store, tmp_path) as h:
        await h.pipeline.ingest([volume_event(h, vol, project, "volume.create.end", CREATED, 10)])
        assert (await h.rows())[("volume", vol)].size["type"] == SSD
        await no_drift(h, T0 + minutes(60))
        assert (await h.rows())[("volume", vol)].size["type"] == "ssd"
        # The resize arrives after the names are known: named at ingest, what cinder said kept beside.
        await h.pipeline.ingest([volume_event(h, vol, project, "volume.resize.end", RESIZED, 20)])
        await no_drift(h, T0 + minutes(120), T0 + minutes(180))
        assert set(await the_record(h, vol)) == {"ssd"}
        events = await h.store.lifecycle_events(ResourceKey(h.cloud, "volume", vol))
        assert [e.event.payload["provider"]["size_as_reported"] for e in events] == [{"type": SSD}] * 2


async def test_names_learnt_at_the_scheduler_start_name_the_create_at_ingest(
    store: Store, tmp_path: Path
) -> None:
    w, _, _ = world()
    async with open_harness(w, store, tmp_path) as h:
        h.at(T0)
        # An interval long enough that no run starts within the test: only the start-up listing runs.
        entry = CloudEntry(h.cloud, "openstack", "openstack", {"os_cloud": "admin"}, sync_interval_s=86400)
        other = CloudEntry(
            h.cloud + "-b", "openstack", "openstack", {"os_cloud": "admin"}, sync_interval_s=86400
        )
        service = SyncService(
            [other, entry], store=store, pipeline=h.pipeline, settings=RunSettings(settle_s=0)
        )
        stopping = anyio.Event()
        async with anyio.create_task_group() as tg:
            # The second cloud by name waits half an interval for its first run; its names come first.
            cloud = max(entry.cloud, other.cloud)
            tg.start_soon(
                lambda: run_cloud_scheduler(service, cloud, ActorContext("s", stopping, lambda: None))
            )
            with anyio.fail_after(10):
                while not await store.size_names(cloud):  # noqa: ASYNC110 (the store has no event to wait on)
                    await anyio.sleep(0.05)
            stopping.set()
        assert await store.last_completed_sync_started_at(cloud) is None
        assert [(n.value, n.name) for n in await store.size_names(cloud)] == [(SSD, "ssd")]


async def test_a_run_that_could_not_list_the_types_is_named_by_the_next(store: Store, tmp_path: Path) -> None:
    # A run whose type listing fails cannot tell the id from another type: it books the listed name, as
    # for any drift (and ends failed). Once a listing names the id, the span before that correction
    # reads under the name too: nothing is billed under the id.
    w, vol, project = world()

    def refuse_types(state) -> None:  # type: ignore[no-untyped-def]
        state.faults.volume_types_refused = True

    async with open_harness(w, store, tmp_path, prepare=refuse_types) as h:
        await h.pipeline.ingest([volume_event(h, vol, project, "volume.create.end", CREATED, 10)])
        first = await h.sync(T0 + minutes(60))
        assert first.status is Status.FAILED and first.stats["updated"] == 1
        assert await h.store.size_names(h.cloud) == []
        assert SSD in await the_record(h, vol)
        h.state.faults.volume_types_refused = False
        await no_drift(h, T0 + minutes(65), T0 + minutes(68))
        assert set(await the_record(h, vol)) == {"ssd"}


async def test_a_name_the_listing_never_gives_leaves_the_id_and_books_the_listed_name(
    store: Store, tmp_path: Path
) -> None:
    # A type deleted in cinder before any listing saw it: the listing names no such id, so the id is
    # what the record can say, and the run books what the volume listing shows, as for any drift.
    b = builder()
    p = b.project("alpha")
    gone = "00000000-dead-4bee-8eef-000000000000"
    b.volume(p, b.volume_type("ssd", type_id=SSD), size_gb=10, created_at=CREATED)
    w = b.build()
    vol = w.resources[0].resource_id
    async with open_harness(w, store, tmp_path) as h:
        event = volume_event(h, vol, p.id, "volume.create.end", CREATED, 10)
        event["payload"]["size"]["type"] = gone
        await h.pipeline.ingest([event])
        outcome = await h.sync(T0 + minutes(60))
        assert outcome.stats["updated"] == 1
        assert (await h.rows())[("volume", vol)].size["type"] == "ssd"
