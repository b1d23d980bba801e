"""What a run books for instances, against the fake nova over HTTP: the create at the launch, the whole
life the bus missed, and the create a history lacks."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from reconcile_support import T0, Harness, builder, collector_event, events_of, minutes, open_harness

from tally.core import Interval, ResourceKey, lifecycle, parse_instant
from tally.reconcile import Status
from tally.store import Store

pytestmark = pytest.mark.anyio

CI = {"vcpus": 2, "ram_gb": 4, "disk_gb": 20, "flavor": "ci.medium"}
LAUNCH = T0 + minutes(70) + timedelta(seconds=40)
GONE = T0 + minutes(95)


async def intervals(h: Harness, resource_id: str) -> tuple[Interval, ...]:
    return lifecycle(await h.store.lifecycle_events(ResourceKey(h.cloud, "instance", resource_id))).intervals


def ci_world():  # type: ignore[no-untyped-def]
    """A CI runner launched 40 s after its request at T0+70 min and deleted at T0+95 min: between two
    hourly syncs, so no run ever lists it alive."""
    b = builder()
    p = b.project("ci")
    f = b.flavor("ci.medium", vcpus=2, ram_mb=4096, disk_gb=20)
    runner = b.instance(p, f, created_at=T0 + minutes(70), building=timedelta(seconds=40)).terminate(GONE)
    return b, p, runner.build()


async def test_instance_create_dated_at_its_launch(store: Store, tmp_path: Path) -> None:
    b = builder()
    p = b.project("alpha")
    f = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    vm = b.instance(p, f, created_at=T0 + minutes(5), building=timedelta(seconds=47)).build()
    async with open_harness(b.build(), store, tmp_path) as h:
        assert (await h.sync(T0 + minutes(60))).status is Status.COMPLETED
        (create,) = await events_of(h, "instance", vm.resource_id)
        # the collector's create.end carries the launch, not the API request 47 s earlier
        assert parse_instant(create["timestamp"]) == T0 + minutes(5) + timedelta(seconds=47)


async def test_whole_life_the_bus_missed_booked_from_launch_to_termination(
    store: Store, tmp_path: Path
) -> None:
    b, p, runner = ci_world()
    async with open_harness(b.build(), store, tmp_path, settle_s=60) as h:
        await h.sync(T0 + minutes(60))
        outcome = await h.sync(T0 + minutes(120))
        assert outcome.status is Status.COMPLETED
        assert (outcome.stats["created"], outcome.stats["deleted"]) == (1, 1)
        create, delete = await events_of(h, "instance", runner.resource_id)
        assert (create["event_type"], parse_instant(create["timestamp"])) == ("sync.create", LAUNCH)
        assert (create["project_id"], create["payload"]["state"], create["payload"]["size"]) == (
            p.id,
            "active",
            CI,
        )
        assert create["payload"]["provider"]["reason"] == "missed create"
        assert (delete["event_type"], parse_instant(delete["timestamp"])) == ("sync.delete", GONE)
        assert delete["payload"]["provider"]["reason"] == "reported delete"
        assert create["event_id"] != delete["event_id"]
        assert await intervals(h, runner.resource_id) == (Interval(LAUNCH, GONE, "active", CI, p.id),)


async def test_held_back_create_after_the_whole_life_changes_no_interval(
    store: Store, tmp_path: Path
) -> None:
    b, p, runner = ci_world()
    async with open_harness(b.build(), store, tmp_path) as h:
        await h.sync(T0 + minutes(60))
        await h.sync(T0 + minutes(120))
        late = collector_event(
            h, "instance", runner.resource_id, "compute.instance.create.end", LAUNCH, project_id=p.id, size=CI
        )
        await h.pipeline.ingest([late, late])
        await h.pipeline.ingest([late])
        assert await intervals(h, runner.resource_id) == (Interval(LAUNCH, GONE, "active", CI, p.id),)
        row = (await h.rows())[("instance", runner.resource_id)]
        assert not row.is_live and row.deleted_at == GONE  # the delete stays terminal
        again = await h.sync(T0 + minutes(180))
        assert (again.stats["created"], again.stats["deleted"]) == (0, 0)


async def test_held_back_create_before_the_run_gets_the_same_life(store: Store, tmp_path: Path) -> None:
    b, p, runner = ci_world()
    async with open_harness(b.build(), store, tmp_path) as h:
        await h.sync(T0 + minutes(60))
        late = collector_event(
            h, "instance", runner.resource_id, "compute.instance.create.end", LAUNCH, project_id=p.id, size=CI
        )
        await h.pipeline.ingest([late])
        outcome = await h.sync(T0 + minutes(120))
        assert (outcome.stats["created"], outcome.stats["deleted"]) == (0, 1)  # a reported delete only
        assert await intervals(h, runner.resource_id) == (Interval(LAUNCH, GONE, "active", CI, p.id),)


async def test_whole_life_deleted_inside_the_window_is_booked_by_the_next_run(
    store: Store, tmp_path: Path
) -> None:
    b = builder()
    p = b.project("ci")
    f = b.flavor("ci.medium", vcpus=2, ram_mb=4096, disk_gb=20)
    poll = T0 + minutes(120)
    gone = poll - timedelta(seconds=20)
    runner = b.instance(p, f, created_at=T0 + minutes(90)).terminate(gone).build()
    async with open_harness(b.build(), store, tmp_path, settle_s=60) as h:
        await h.sync(T0 + minutes(60))
        deferred = await h.sync(poll)
        assert deferred.stats["deferred"] == {"transitional": 0, "recent": 2}
        assert [(d["kind"], d["reason"]) for d in deferred.stats["deferred_resources"]] == [
            ("create", "recent"),
            ("delete", "recent"),
        ]
        assert await events_of(h, "instance", runner.resource_id) == []
        later = await h.sync(poll + minutes(60))  # its deleted window opens a settle window early
        assert (later.stats["created"], later.stats["deleted"]) == (1, 1)
        create, delete = await events_of(h, "instance", runner.resource_id)
        assert parse_instant(create["timestamp"]) == T0 + minutes(90)
        assert parse_instant(delete["timestamp"]) == gone


async def test_server_never_launched_gets_no_life(store: Store, tmp_path: Path) -> None:
    b = builder()
    p = b.project("ci")
    f = b.flavor("ci.medium", vcpus=2, ram_mb=4096, disk_gb=20)
    failed = (
        b.add(
            "instance", p, created_at=T0 + minutes(70), state="active", flavor_id=f.id, transition="building"
        )
        .terminate(T0 + minutes(75))
        .build()
    )
    async with open_harness(b.build(), store, tmp_path) as h:
        await h.sync(T0 + minutes(60))
        outcome = await h.sync(T0 + minutes(120))
        assert outcome.status is Status.COMPLETED
        assert await events_of(h, "instance", failed.resource_id) == []


async def test_history_without_a_create_gets_one_at_the_launch(store: Store, tmp_path: Path) -> None:
    b = builder()
    p = b.project("alpha")
    f = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    small = {"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"}
    launched = T0 - timedelta(days=2) + timedelta(seconds=30)
    stopped = T0 + minutes(10)
    vm = (
        b.instance(p, f, created_at=T0 - timedelta(days=2), building=timedelta(seconds=30))
        .change(stopped, state="shutoff")
        .build()
    )
    async with open_harness(b.build(), store, tmp_path) as h:
        # The create was lost before the month; the power_off (no flavor in it) arrived before any sync.
        await h.pipeline.ingest(
            [
                collector_event(
                    h,
                    "instance",
                    vm.resource_id,
                    "compute.instance.power_off",
                    stopped,
                    project_id=p.id,
                    state="shutoff",
                )
            ]
        )
        outcome = await h.sync(T0 + minutes(60))
        assert outcome.status is Status.COMPLETED
        events = await events_of(h, "instance", vm.resource_id)
        assert [e["event_type"] for e in events] == [
            "sync.create",
            "compute.instance.power_off",
            "sync.update",
        ]
        assert parse_instant(events[0]["timestamp"]) == launched
        assert events[0]["payload"]["size"] == small
        # the history keeps its say from its oldest event on; the create supplies the start and the size,
        # with the facts the collector's create would have carried (launched active), which the
        # power_off then changes at its own instant
        assert events[0]["payload"]["state"] == "active"
        assert await intervals(h, vm.resource_id) == (
            Interval(launched, stopped, "active", small, p.id),
            Interval(stopped, None, "shutoff", small, p.id),
        )
        assert (await h.rows())[("instance", vm.resource_id)].created_at == launched
        again = await h.sync(T0 + minutes(120))
        assert (again.stats["created"], again.stats["updated"]) == (0, 0)


async def test_history_without_a_create_of_a_volume_gets_one_at_its_creation(
    store: Store, tmp_path: Path
) -> None:
    b = builder()
    p = b.project("alpha")
    vt = b.volume_type("ssd")
    created = T0 - timedelta(days=3)
    resized = T0 + minutes(20)
    vol = b.volume(p, vt, size_gb=10, created_at=created).change(resized, size_gb=20).build()
    async with open_harness(b.build(), store, tmp_path) as h:
        await h.pipeline.ingest(
            [
                collector_event(
                    h,
                    "volume",
                    vol.resource_id,
                    "volume.resize.end",
                    resized,
                    project_id=p.id,
                    state="available",
                    size={"size_gb": 20, "type": "ssd"},
                )
            ]
        )
        outcome = await h.sync(T0 + minutes(60))
        assert outcome.stats["created"] == 1 and outcome.stats["updated"] == 0
        events = await events_of(h, "volume", vol.resource_id)
        assert [e["event_type"] for e in events] == ["sync.create", "volume.resize.end"]
        assert parse_instant(events[0]["timestamp"]) == created
        assert (await h.rows())[("volume", vol.resource_id)].created_at == created


async def test_history_without_a_create_of_a_load_balancer_starts_with_no_listener(
    store: Store, tmp_path: Path
) -> None:
    b = builder()
    p = b.project("alpha")
    created = T0 + minutes(5)
    updated = T0 + minutes(12)
    lb = (
        b.loadbalancer(p, created_at=created, listeners=0, pools=0)
        .change(updated, listeners=2, pools=1)
        .build()
    )
    async with open_harness(b.build(), store, tmp_path) as h:
        # The create.end is held back; the update.end (which carries no counts) arrived first.
        update = collector_event(
            h, "loadbalancer", lb.resource_id, "octavia.loadbalancer.update.end", updated, project_id=p.id
        )
        await h.pipeline.ingest([update])
        poll = T0 + minutes(60)
        outcome = await h.sync(poll, entry=h.entry_for("admin", include_octavia=True))
        assert outcome.status is Status.COMPLETED
        events = await events_of(h, "loadbalancer", lb.resource_id)
        assert [e["event_type"] for e in events] == [
            "sync.create",
            "octavia.loadbalancer.update.end",
            "sync.update",
        ]
        assert parse_instant(events[0]["timestamp"]) == created
        assert events[0]["payload"]["size"] == {"listeners": 0, "pools": 0}  # as the collector's create
        held_back = collector_event(
            h,
            "loadbalancer",
            lb.resource_id,
            "octavia.loadbalancer.create.end",
            created,
            project_id=p.id,
            size={"listeners": 0, "pools": 0},
        )
        await h.pipeline.ingest([held_back])
        spans = lifecycle(
            await h.store.lifecycle_events(ResourceKey(h.cloud, "loadbalancer", lb.resource_id))
        )
        assert [(i.start, i.end, dict(i.size)) for i in spans.intervals] == [
            (created, poll, {"listeners": 0, "pools": 0}),
            (poll, None, {"listeners": 2, "pools": 1}),
        ]
