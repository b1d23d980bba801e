"""One resource's life as the month writes it: world timeline, notifications and oracle agree. Pure.

A volume transfer rests the volume in ``awaiting-transfer`` (a cinder status a volume rests in, not
one of its twelve transitions) from the offer until the accept or the cancel; an image exists from
glance's create, at size 0 until its upload; a soft-deleted server rests ``soft_deleted`` until its
restore or nova's reclaim.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tally.collector import Mapped, map_notification
from tally.core import StoredEvent, lifecycle, name_event_size, parse_event
from tally.simulator import Month, WorldBuilder, WorldError
from tally.simulator.generator._recorder import Recorder, Tenant
from tally.simulator.generator._soft_delete import RECLAIM_INTERVAL, reclaim
from tally.simulator.oracle import resource_intervals
from tally.simulator.world import World

T0 = datetime(2026, 7, 1, tzinfo=UTC)
T1 = datetime(2026, 8, 1, tzinfo=UTC)
H = timedelta(hours=1)
S = timedelta(seconds=1)
GIB = 2**30

Span = tuple[datetime, datetime | None, str, str, dict[str, Any]]


def _recorder() -> tuple[Recorder, Tenant, Tenant]:
    b = WorldBuilder(cloud="os-sim", period_from=T0, period_to=T1)
    flavors = {"m1.small": b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)}
    rec = Recorder(b, flavors, {"ssd": b.volume_type("ssd")})
    donor = Tenant(b.project("donor"), "a" * 32, "classic", random.Random(1))
    taker = Tenant(b.project("taker"), "b" * 32, "classic", random.Random(2))
    return rec, donor, taker


def _month(rec: Recorder) -> World:
    world = rec.builder.build()
    for n in rec.notifications:
        n.message_id = f"7f0c0000-0000-4000-8000-{n.seq:012d}"
        n.world = world
    return world


def _notified(rec: Recorder, after: datetime) -> list[tuple[str, str, bool, bool]]:
    """(event type, payload status, billable, booked by the collector) of each notification from ``after``."""
    return [
        (
            n.event_type,
            n.payload().get("status", ""),
            n.billable,
            isinstance(map_notification(n.amqp_body(), cloud="os-sim"), Mapped),
        )
        for n in rec.notifications
        if n.timestamp >= after
    ]


def _oracle(world: World, resource_id: str) -> list[Span]:
    r = world.resource(resource_id)
    assert r is not None
    return [(i.start, i.end, i.state, i.project_id, dict(i.size)) for i in resource_intervals(world, r)]


def _collected(rec: Recorder, resource_id: str) -> list[Span]:
    """The intervals the collector's events fold into, the last one closed at the period's end, their
    volume types named by the type listing as the store names them (cinder notifies the id)."""
    names = {("volume", "type", t.id): t.name for t in rec.vtypes.values()}
    stored = []
    for n in rec.notifications:
        outcome = map_notification(n.amqp_body(), cloud="os-sim")
        if isinstance(outcome, Mapped) and outcome.event["resource_id"] == resource_id:
            event = name_event_size(parse_event(outcome.event), names)
            stored.append(StoredEvent(event, event.timestamp))
    return [(i.start, i.end or T1, i.state, i.project_id, dict(i.size)) for i in lifecycle(stored).intervals]


def test_an_accepted_transfer_rests_the_volume_in_awaiting_transfer_until_the_accept() -> None:
    rec, donor, taker = _recorder()
    vol = rec.volume(donor, 50, "ssd", T0 + H, "spare", random.Random(3))
    offer = T0 + 5 * H
    done = rec.transfer(vol, taker, offer, random.Random(4), accepted=True)
    world = _month(rec)
    size = {"size_gb": 50, "type": "ssd"}
    created = vol.draft.build().timeline[1].start
    assert _oracle(world, vol.rid) == [
        (created, offer + S, "available", donor.project.id, size),
        (offer + S, done, "awaiting-transfer", donor.project.id, size),
        (done, T1, "available", taker.project.id, size),
    ]
    r = world.resource(vol.rid)
    seg = None if r is None else r.segment_at(offer + 30 * S)
    assert seg is not None and seg.state == "awaiting-transfer" and seg.transition is None
    assert _notified(rec, offer) == [
        ("volume.transfer.create.start", "available", False, False),
        ("volume.transfer.create.end", "available", False, False),
        ("volume.transfer.accept.start", "awaiting-transfer", False, False),
        ("volume.transfer.accept.end", "available", True, True),
    ]
    # What the collector books misses only the offer, which a sync's poll books.
    assert _collected(rec, vol.rid) == [
        (created, done, "available", donor.project.id, size),
        (done, T1, "available", taker.project.id, size),
    ]


def test_a_cancelled_transfer_gives_the_volume_back_to_its_owner_available() -> None:
    rec, donor, taker = _recorder()
    vol = rec.volume(donor, 100, "ssd", T0 + H, "spare", random.Random(3))
    offer = T0 + 5 * H
    done = rec.transfer(vol, taker, offer, random.Random(4), accepted=False)
    world = _month(rec)
    size = {"size_gb": 100, "type": "ssd"}
    created = vol.draft.build().timeline[1].start
    assert _oracle(world, vol.rid) == [
        (created, offer + S, "available", donor.project.id, size),
        (offer + S, done, "awaiting-transfer", donor.project.id, size),
        (done, T1, "available", donor.project.id, size),
    ]
    assert _notified(rec, offer) == [
        ("volume.transfer.create.start", "available", False, False),
        ("volume.transfer.create.end", "available", False, False),
        ("volume.transfer.delete.start", "awaiting-transfer", False, False),
        ("volume.transfer.delete.end", "awaiting-transfer", False, False),
    ]
    assert _collected(rec, vol.rid) == [(created, T1, "available", donor.project.id, size)]


def test_an_image_is_queued_at_size_0_then_active_with_its_size_then_deleted() -> None:
    rec, owner, _ = _recorder()
    image = rec.image(owner, 3 * GIB, T0 + H, "image-1", random.Random(5))
    rec.delete_image(image, T0 + 9 * H)
    world = _month(rec)
    uploaded = image.draft.build().timeline[-1].start
    expected = [
        (T0 + H, uploaded, "active", owner.project.id, {"size_gb": 0}),
        (uploaded, T0 + 9 * H, "active", owner.project.id, {"size_gb": 3}),
    ]
    assert _oracle(world, image.rid) == expected
    assert _collected(rec, image.rid) == expected
    assert [(t, status, billable) for t, status, billable, _ in _notified(rec, T0)] == [
        ("image.create", "queued", True),
        ("image.prepare", "saving", False),
        ("image.upload", "active", True),
        ("image.activate", "active", False),
        ("image.delete", "deleted", True),
    ]


def test_an_image_deleted_before_its_upload_is_an_image_at_size_0() -> None:
    b = WorldBuilder(cloud="os-sim", period_from=T0, period_to=T1)
    p = b.project("p")
    b.image(p, size_bytes=None, created_at=T0 + H, transition="queued").terminate(T0 + 2 * H)
    world = b.build()
    [image] = world.of_type("image")
    assert _oracle(world, image.resource_id) == [(T0 + H, T0 + 2 * H, "active", p.id, {"size_gb": 0})]


def test_volume_statuses_a_volume_rests_in_are_states_of_the_world() -> None:
    b = WorldBuilder(cloud="os-sim", period_from=T0, period_to=T1)
    p, ssd = b.project("p"), b.volume_type("ssd")
    vol = b.volume(p, ssd, size_gb=10, created_at=T0 + H)
    vol.change(T0 + 2 * H, state="awaiting-transfer").change(T0 + 3 * H, state="maintenance")
    world = b.build()
    [r] = world.of_type("volume")
    assert [i.state for i in resource_intervals(world, r)] == [
        "available",
        "awaiting-transfer",
        "maintenance",
    ]
    offered = b.volume(p, ssd, size_gb=10, created_at=T0 + H, transition="awaiting-transfer")
    offered.change(T0 + 2 * H)
    with pytest.raises(WorldError, match="transition 'awaiting-transfer' is not one the platform shows"):
        b.build()


SMALL = {"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"}


def test_a_soft_deleted_server_rests_restorable_until_its_restore_or_its_reclaim() -> None:
    rec, owner, _ = _recorder()
    rng = random.Random(7)
    kept = rec.boot(owner, "m1.small", T0 + H, "kept", "compute-01", rng)
    gone = rec.boot(owner, "m1.small", T0 + H, "gone", "compute-01", rng)
    soft = rec.soft_delete(kept, T0 + 5 * H, rng)
    back = rec.restore(kept, T0 + 9 * H, rng)
    gone_soft = rec.soft_delete(gone, T0 + 5 * H, rng)
    reclaimed = reclaim(rec, gone, gone_soft + RECLAIM_INTERVAL, rng)
    world = _month(rec)
    spans = _oracle(world, kept.rid)
    # One history through the restore: the same server, active again, never deleted.
    assert [(start, end, state) for start, end, state, _, _ in spans[1:]] == [
        (soft, back, "soft_deleted"),
        (back, T1, "active"),
    ]
    assert spans[0][1:] == (soft, "active", owner.project.id, SMALL)
    assert _collected(rec, kept.rid) == spans
    # Nova's reclaim, the interval after the soft delete, is the delete: the soft_deleted span ends there.
    (_, (start, end, state, _, _)) = _oracle(world, gone.rid)
    assert (start, end, state) == (gone_soft, reclaimed, "soft_deleted")
    assert end - start >= RECLAIM_INTERVAL
    assert _collected(rec, gone.rid) == _oracle(world, gone.rid)


def test_the_month_soft_deletes_servers_to_each_fate_and_rests_attached_volumes_in_use(july: Month) -> None:
    """The workload the fake rehearses seed 001 with: soft deletes restored, reclaimed by nova after the
    interval, or still restorable at the month's end; volumes in-use while attached; a hidden image."""
    world = july.world
    fates: dict[str, int] = {"restored": 0, "reclaimed": 0, "restorable": 0}
    for server in world.of_type("instance"):
        intervals = resource_intervals(world, server)
        soft = [n for n, i in enumerate(intervals) if i.state == "soft_deleted"]
        if not soft:
            continue
        rest = intervals[soft[0]]
        if soft[0] + 1 < len(intervals):
            assert intervals[soft[0] + 1].state == "active"
            fates["restored"] += 1
        elif server.terminated_at is not None:
            assert rest.end == server.terminated_at and rest.end - rest.start >= RECLAIM_INTERVAL
            fates["reclaimed"] += 1
        else:
            assert server.alive_at(world.period_to)
            fates["restorable"] += 1
    assert all(fates.values()), fates
    in_use = [
        v for v in world.of_type("volume") if any(i.state == "in-use" for i in resource_intervals(world, v))
    ]
    assert in_use
    assert any(image.hidden for image in world.of_type("image"))
