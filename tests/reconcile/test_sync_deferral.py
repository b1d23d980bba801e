"""Deferral against the fake cloud: transitional evidence per type, the recent window, the counts."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from reconcile_support import T0, builder, collector_event, events_of, minutes, open_harness

from tally.core import parse_instant
from tally.reconcile import Status
from tally.store import Store

pytestmark = pytest.mark.anyio

SMALL = {"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"}


def deferred_metric(cloud: str, reason: str) -> float:
    return (
        REGISTRY.get_sample_value("tally_sync_resources_deferred_total", {"cloud": cloud, "reason": reason})
        or 0.0
    )


async def test_transitional_evidence_per_type_defers(store: Store, tmp_path: Path) -> None:
    b = builder()
    p = b.project("alpha")
    f = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    vt = b.volume_type("ssd")
    poll = T0 + minutes(60)
    building = b.instance(p, f, created_at=T0 + minutes(1), building=timedelta(hours=5)).build()
    rebooting = (
        b.instance(p, f, created_at=T0 + minutes(2))
        .transition(T0 + minutes(30), T0 + minutes(300), "rebooting", state="active")
        .build()
    )
    creating = (
        b.volume(p, vt, size_gb=5, created_at=T0 + minutes(3))
        .transition(T0 + minutes(3), T0 + minutes(300), "creating")
        .build()
    )
    pending = (
        b.loadbalancer(p, created_at=T0 + minutes(4), listeners=1, pools=1)
        .transition(T0 + minutes(10), T0 + minutes(300), "PENDING_UPDATE", listeners=2, pools=2)
        .build()
    )
    resting = b.volume(p, vt, size_gb=5, created_at=T0 + minutes(5)).build()
    async with open_harness(b.build(), store, tmp_path) as h:
        before = deferred_metric(h.cloud, "transitional")
        outcome = await h.sync(poll, entry=h.entry_for("admin", include_octavia=True))
        assert outcome.status is Status.COMPLETED
        assert outcome.stats["deferred"] == {"transitional": 4, "recent": 0}
        assert sorted(
            (d["resource_id"], d["kind"], d["reason"]) for d in outcome.stats["deferred_resources"]
        ) == sorted(
            (r.resource_id, "create", "transitional") for r in (building, rebooting, creating, pending)
        )
        assert (
            "volume" in outcome.stats["complete_types"] and "loadbalancer" in outcome.stats["complete_types"]
        )
        assert outcome.stats["created"] == 1
        assert deferred_metric(h.cloud, "transitional") - before == 4
        rows = await h.rows()
        for r in (building, rebooting, creating, pending):
            assert (r.resource_type, r.resource_id) not in rows
        assert ("volume", resting.resource_id) in rows
        # Still in transition at the next run: deferred again, counted again (corrections, not resources).
        again = await h.sync(poll + minutes(10), entry=h.entry_for("admin", include_octavia=True))
        assert again.stats["deferred"]["transitional"] == 4


async def test_recent_window_defers_a_change_inside_it(store: Store, tmp_path: Path) -> None:
    b = builder()
    p = b.project("alpha")
    vt = b.volume_type("ssd")
    poll = T0 + minutes(60)
    fresh = b.volume(p, vt, size_gb=5, created_at=poll - timedelta(seconds=30)).build()
    old = b.volume(p, vt, size_gb=5, created_at=poll - timedelta(seconds=300)).build()
    async with open_harness(b.build(), store, tmp_path, settle_s=60) as h:
        outcome = await h.sync(poll)
        assert outcome.stats["deferred"] == {"transitional": 0, "recent": 1}
        rows = await h.rows()
        assert ("volume", fresh.resource_id) not in rows and ("volume", old.resource_id) in rows
        later = await h.sync(poll + minutes(5))  # the next run books it, dated at the platform's creation
        assert later.stats["created"] == 1
        (create,) = await events_of(h, "volume", fresh.resource_id)
        assert parse_instant(create["timestamp"]) == poll - timedelta(seconds=30)


async def test_instants_after_the_runs_instant_count_as_inside_the_window(
    store: Store, tmp_path: Path
) -> None:
    b = builder()
    p = b.project("alpha")
    vt = b.volume_type("ssd")
    told = T0 + minutes(60)
    b.volume(
        p, vt, size_gb=5, created_at=T0 + minutes(70)
    )  # exists at the cloud's present, after the told instant
    async with open_harness(b.build(), store, tmp_path, settle_s=60) as h:
        outcome = await h.sync(told, cloud_at=T0 + minutes(80))
        assert outcome.stats["deferred"] == {"transitional": 0, "recent": 1}
        assert outcome.stats["created"] == 0


async def test_rows_newest_event_inside_the_window_blocks_the_absence_delete(
    store: Store, tmp_path: Path
) -> None:
    b = builder()
    p = b.project("alpha")
    b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    poll = T0 + minutes(60)
    async with open_harness(b.build(), store, tmp_path, settle_s=60) as h:
        # Created after nova answered, delivered before the rows were read: a live row the listing missed.
        await h.pipeline.ingest(
            [
                collector_event(
                    h,
                    "instance",
                    "vm-new",
                    "compute.instance.create.end",
                    poll - timedelta(seconds=5),
                    project_id=p.id,
                    size=SMALL,
                )
            ]
        )
        outcome = await h.sync(poll)
        assert outcome.stats["deleted"] == 0
        assert outcome.stats["deferred"]["recent"] == 1
        assert (await h.rows())[("instance", "vm-new")].is_live


async def test_settle_zero_turns_off_only_the_recent_rule(store: Store, tmp_path: Path) -> None:
    b = builder()
    p = b.project("alpha")
    f = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    poll = T0 + minutes(60)
    b.instance(p, f, created_at=poll - timedelta(seconds=5))
    b.instance(p, f, created_at=T0 + minutes(1), building=timedelta(hours=2))
    async with open_harness(b.build(), store, tmp_path, settle_s=0) as h:
        outcome = await h.sync(poll)
        assert outcome.stats["created"] == 1
        assert outcome.stats["deferred"] == {"transitional": 1, "recent": 0}


async def test_loadbalancer_counts_booked_once_out_of_pending(store: Store, tmp_path: Path) -> None:
    b = builder()
    p = b.project("alpha")
    lb = (
        b.loadbalancer(p, created_at=T0 + minutes(1), listeners=0, pools=0)
        .change(T0 + minutes(3), listeners=2, pools=1)
        .build()
    )
    dying = (
        b.loadbalancer(p, created_at=T0 + minutes(1))
        .transition(T0 + minutes(30), T0 + minutes(300), "PENDING_DELETE")
        .build()
    )
    async with open_harness(b.build(), store, tmp_path) as h:
        await h.pipeline.ingest(
            [
                collector_event(
                    h,
                    "loadbalancer",
                    lb.resource_id,
                    "octavia.loadbalancer.create.end",
                    T0 + minutes(1),
                    project_id=p.id,
                    size={"listeners": 0, "pools": 0},
                ),
                collector_event(
                    h,
                    "loadbalancer",
                    dying.resource_id,
                    "octavia.loadbalancer.create.end",
                    T0 + minutes(1),
                    project_id=p.id,
                    size={"listeners": 0, "pools": 0},
                ),
            ]
        )
        outcome = await h.sync(T0 + minutes(60), entry=h.entry_for("admin", include_octavia=True))
        assert outcome.status is Status.COMPLETED
        update = (await events_of(h, "loadbalancer", lb.resource_id))[-1]
        assert update["event_type"] == "sync.update"
        assert update["payload"]["size"] == {"listeners": 2, "pools": 1}
        # PENDING_DELETE is observed (transitional), so its live row is not booked deleted by absence.
        rows = await h.rows()
        assert rows[("loadbalancer", dying.resource_id)].is_live
        assert outcome.stats["deleted"] == 0


async def test_without_include_octavia_load_balancers_are_left_alone(store: Store, tmp_path: Path) -> None:
    b = builder()
    p = b.project("alpha")
    async with open_harness(b.build(), store, tmp_path) as h:
        await h.pipeline.ingest(
            [
                collector_event(
                    h,
                    "loadbalancer",
                    "lb-x",
                    "octavia.loadbalancer.create.end",
                    T0 + minutes(1),
                    project_id=p.id,
                    size={"listeners": 0, "pools": 0},
                )
            ]
        )
        outcome = await h.sync(T0 + minutes(60))
        assert outcome.status is Status.COMPLETED and outcome.stats["deleted"] == 0
