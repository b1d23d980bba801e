"""Soft-deleted servers against the fake nova over HTTP: restorable, so never deleted by a run; the
restore keeps one history; nova's reclaim is the delete, dated when nova reclaimed the server."""

from __future__ import annotations

from pathlib import Path

import pytest
from reconcile_support import T0, Harness, builder, collector_event, events_of, minutes, open_harness

from tally.core import Interval, ResourceKey, lifecycle, parse_instant
from tally.reconcile import Status
from tally.simulator.world import Resource, WorldProject
from tally.store import Store

pytestmark = pytest.mark.anyio

SIZE = {"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"}
LAUNCH = T0 + minutes(5)
SOFT = T0 + minutes(30)
RESTORED = T0 + minutes(150)
RECLAIMED = T0 + minutes(170)


async def intervals(h: Harness, resource_id: str) -> tuple[Interval, ...]:
    return lifecycle(await h.store.lifecycle_events(ResourceKey(h.cloud, "instance", resource_id))).intervals


def world(*, restored: bool = False, reclaimed: bool = False):  # type: ignore[no-untyped-def]
    """A server launched at T0+5 min and soft-deleted at T0+30 min, then restored or reclaimed."""
    b = builder()
    p = b.project("alpha")
    f = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    vm = b.instance(p, f, created_at=LAUNCH).change(SOFT, state="soft_deleted")
    if restored:
        vm.change(RESTORED, state="active")
    if reclaimed:
        vm.terminate(RECLAIMED)
    return b.build(), p, vm.build()


async def collected(h: Harness, p: WorldProject, vm: Resource, *soft: str) -> None:
    """The collector's create, and the soft delete / restore it delivered."""
    events = [
        collector_event(
            h, "instance", vm.resource_id, "compute.instance.create.end", LAUNCH, project_id=p.id, size=SIZE
        )
    ]
    at = {"compute.instance.soft_delete": SOFT, "compute.instance.restore": RESTORED}
    state = {"compute.instance.soft_delete": "soft_deleted", "compute.instance.restore": "active"}
    for event_type in soft:
        events.append(
            collector_event(
                h,
                "instance",
                vm.resource_id,
                event_type,
                at[event_type],
                project_id=p.id,
                state=state[event_type],
            )
        )
    await h.pipeline.ingest(events)


async def test_soft_deleted_server_the_bus_reported_gets_no_correction(store: Store, tmp_path: Path) -> None:
    w, p, vm = world()
    async with open_harness(w, store, tmp_path) as h:
        await collected(h, p, vm, "compute.instance.soft_delete")
        first = await h.sync(T0 + minutes(60))  # no deleted window yet: the absence pass alone
        second = await h.sync(T0 + minutes(120))  # the deleted window names it too
        for outcome in (first, second):
            assert outcome.status is Status.COMPLETED
            assert (outcome.stats["created"], outcome.stats["updated"], outcome.stats["deleted"]) == (0, 0, 0)
        assert await intervals(h, vm.resource_id) == (
            Interval(LAUNCH, SOFT, "active", SIZE, p.id),
            Interval(SOFT, None, "soft_deleted", SIZE, p.id),
        )


async def test_soft_delete_the_bus_missed_is_booked_as_a_state_not_a_delete(
    store: Store, tmp_path: Path
) -> None:
    w, p, vm = world()
    async with open_harness(w, store, tmp_path) as h:
        await collected(h, p, vm)
        outcome = await h.sync(T0 + minutes(60))
        assert (outcome.stats["updated"], outcome.stats["deleted"]) == (1, 0)
        *_, update = await events_of(h, "instance", vm.resource_id)
        assert (update["event_type"], update["payload"]["state"]) == ("sync.update", "soft_deleted")
        row = (await h.rows())[("instance", vm.resource_id)]
        assert row.is_live and row.state == "soft_deleted"


async def test_restore_keeps_one_history(store: Store, tmp_path: Path) -> None:
    w, p, vm = world(restored=True)
    async with open_harness(w, store, tmp_path) as h:
        await collected(h, p, vm, "compute.instance.soft_delete")
        outcomes = [await h.sync(T0 + minutes(60)), await h.sync(T0 + minutes(120))]
        restore = collector_event(
            h, "instance", vm.resource_id, "compute.instance.restore", RESTORED, project_id=p.id
        )
        await h.pipeline.ingest([restore])  # delivered as nova sent it, before the next run
        outcomes.append(await h.sync(T0 + minutes(180)))
        for outcome in outcomes:
            assert (outcome.stats["created"], outcome.stats["updated"], outcome.stats["deleted"]) == (0, 0, 0)
        assert await intervals(h, vm.resource_id) == (
            Interval(LAUNCH, SOFT, "active", SIZE, p.id),
            Interval(SOFT, RESTORED, "soft_deleted", SIZE, p.id),
            Interval(RESTORED, None, "active", SIZE, p.id),
        )


async def test_reclaim_the_bus_missed_is_dated_when_nova_reclaimed(store: Store, tmp_path: Path) -> None:
    w, p, vm = world(reclaimed=True)
    async with open_harness(w, store, tmp_path) as h:
        await collected(h, p, vm, "compute.instance.soft_delete")
        await h.sync(T0 + minutes(120))
        outcome = await h.sync(T0 + minutes(180))
        assert outcome.stats["deleted"] == 1
        *_, delete = await events_of(h, "instance", vm.resource_id)
        assert delete["event_type"] == "sync.delete"
        assert parse_instant(delete["timestamp"]) == RECLAIMED
        assert delete["payload"]["provider"]["reason"] == "reported delete"
        assert await intervals(h, vm.resource_id) == (
            Interval(LAUNCH, SOFT, "active", SIZE, p.id),
            Interval(SOFT, RECLAIMED, "soft_deleted", SIZE, p.id),
        )


async def test_soft_deleted_server_the_record_never_held_starts_at_its_launch(
    store: Store, tmp_path: Path
) -> None:
    w, p, vm = world()
    async with open_harness(w, store, tmp_path) as h:
        outcome = await h.sync(T0 + minutes(60))
        assert (outcome.stats["created"], outcome.stats["deleted"]) == (1, 0)
        assert (await h.rows())[("instance", vm.resource_id)].project_id == p.id
        (create,) = await events_of(h, "instance", vm.resource_id)
        assert (create["event_type"], parse_instant(create["timestamp"])) == ("sync.create", LAUNCH)
        # Nova's listing does not say since when it rests soft-deleted: its state is booked from the start.
        assert create["payload"]["state"] == "soft_deleted"
