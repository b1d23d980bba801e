"""A late event behind a run that vouched for the row, against the fake cloud over HTTP, on SQLite and
PostgreSQL: a later run restores what that run listed, at its poll (beyond the reference)."""

from __future__ import annotations

from pathlib import Path

import pytest
from reconcile_support import T0, builder, collector_event, events_of, minutes, open_harness

from tally.core import ResourceKey, lifecycle, parse_instant
from tally.reconcile import Status
from tally.store import Store

pytestmark = pytest.mark.anyio

OCTAVIA = {"include_octavia": True}


async def test_a_held_back_create_end_behind_the_runs_that_listed_the_load_balancer_is_restored(
    store: Store, tmp_path: Path
) -> None:
    b = builder()
    p = b.project("alpha")
    created = T0 + minutes(10)
    lb = b.loadbalancer(p, created_at=created).change(T0 + minutes(12), listeners=2, pools=1).build()
    async with open_harness(b.build(), store, tmp_path) as h:
        entry = h.entry_for("admin", **OCTAVIA)
        # the collector's create.end (no listener, no pool) is held back and its update.end lost
        booking = await h.sync(T0 + minutes(60), entry=entry)
        vouching = await h.sync(T0 + minutes(120), entry=entry)
        assert (booking.stats["created"], vouching.stats["updated"]) == (1, 0)
        held_back = collector_event(
            h,
            "loadbalancer",
            lb.resource_id,
            "octavia.loadbalancer.create.end",
            created + minutes(0.5),
            project_id=p.id,
            size={"listeners": 0, "pools": 0},
        )
        await h.pipeline.ingest([held_back])
        restoring = await h.sync(T0 + minutes(180), entry=entry)
        assert restoring.status is Status.COMPLETED and restoring.stats["updated"] == 1
        events = await events_of(h, "loadbalancer", lb.resource_id)
        assert [e["event_type"] for e in events] == [
            "sync.create",
            "octavia.loadbalancer.create.end",
            "sync.update",
        ]
        restore = events[-1]
        # the update the run at 60 would have booked had the create.end been there, at its poll
        assert parse_instant(restore["timestamp"]) == T0 + minutes(60)
        assert restore["payload"]["size"] == {"listeners": 2, "pools": 1}
        assert restore["payload"]["provider"] == {
            "reason": "drift",
            "sync_run_id": restoring.sync_run_id,
            "changes": {
                "size": {"old": {"listeners": 0, "pools": 0}, "new": {"listeners": 2, "pools": 1}},
            },
        }
        spans = lifecycle(
            await h.store.lifecycle_events(ResourceKey(h.cloud, "loadbalancer", lb.resource_id))
        )
        assert [(i.start, i.end, dict(i.size)) for i in spans.intervals] == [
            (created, created + minutes(0.5), {"listeners": 2, "pools": 1}),
            (created + minutes(0.5), T0 + minutes(60), {"listeners": 0, "pools": 0}),
            (T0 + minutes(60), None, {"listeners": 2, "pools": 1}),
        ]
        # the record agrees with every run now: the next run books nothing
        after = await h.sync(T0 + minutes(240), entry=entry)
        assert (after.stats["created"], after.stats["updated"], after.stats["deleted"]) == (0, 0, 0)


async def test_a_held_back_power_off_before_a_lost_power_on_is_restored_at_the_run_that_listed_it_active(
    store: Store, tmp_path: Path
) -> None:
    b = builder()
    p = b.project("alpha")
    f = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    off, on = T0 + minutes(70), T0 + minutes(100)
    vm = b.instance(p, f, created_at=T0 + minutes(5)).change(off, state="shutoff").change(on, state="active")
    instance = vm.build()
    async with open_harness(b.build(), store, tmp_path) as h:
        assert (await h.sync(T0 + minutes(60))).stats["created"] == 1
        vouching = await h.sync(T0 + minutes(120))  # active, and so is its row: no correction
        assert vouching.stats["updated"] == 0
        power_off = collector_event(
            h,
            "instance",
            instance.resource_id,
            "compute.instance.power_off.end",
            off,
            project_id=p.id,
            state="shutoff",
        )
        await h.pipeline.ingest([power_off])  # held back; the power_on never arrives
        restoring = await h.sync(T0 + minutes(180))
        assert restoring.stats["updated"] == 1
        spans = lifecycle(
            await h.store.lifecycle_events(ResourceKey(h.cloud, "instance", instance.resource_id))
        )
        assert [(i.start, i.end, i.state) for i in spans.intervals] == [
            (T0 + minutes(5), off, "active"),
            (off, T0 + minutes(120), "shutoff"),
            (T0 + minutes(120), None, "active"),
        ]
        # a run that read the late event before anyone vouched otherwise leaves it alone
        late = collector_event(
            h,
            "instance",
            instance.resource_id,
            "compute.instance.power_off.end",
            T0 + minutes(200),
            project_id=p.id,
            state="shutoff",
        )
        await h.pipeline.ingest([late])
        drift = await h.sync(T0 + minutes(240))
        assert drift.stats["updated"] == 1
        newest = (await events_of(h, "instance", instance.resource_id))[-1]
        assert parse_instant(newest["timestamp"]) == T0 + minutes(240)
