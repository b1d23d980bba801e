"""Dating, against the fake cloud over HTTP, on SQLite and PostgreSQL: each test named after its rule."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

import pytest
from reconcile_support import T0, builder, collector_event, events_of, minutes, open_harness

from tally.core import format_instant, parse_instant
from tally.reconcile import Status
from tally.store import Store

pytestmark = pytest.mark.anyio


def small_world(**kw: object):  # type: ignore[no-untyped-def]
    b = builder()
    p = b.project("alpha")
    f = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    return b, p, f


async def test_create_dated_at_platform_creation_when_row_never_existed(store: Store, tmp_path: Path) -> None:
    b, p, f = small_world()
    vm = b.instance(p, f, created_at=T0 + minutes(5)).build()
    async with open_harness(b.build(), store, tmp_path) as h:
        outcome = await h.sync(T0 + minutes(60))
        assert outcome.status is Status.COMPLETED
        (event,) = await events_of(h, "instance", vm.resource_id)
        assert event["event_type"] == "sync.create"
        assert event["source"] == "reconciliation"
        assert parse_instant(event["timestamp"]) == T0 + minutes(5)
        assert event["payload"]["state"] == "active"
        assert event["payload"]["size"] == {"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"}
        assert event["payload"]["provider"] == {"reason": "missed create", "sync_run_id": outcome.sync_run_id}


async def test_create_of_a_deleted_row_dated_at_poll(store: Store, tmp_path: Path) -> None:
    b, p, f = small_world()
    vm = b.instance(p, f, created_at=T0 + minutes(5)).build()
    async with open_harness(b.build(), store, tmp_path) as h:
        await h.pipeline.ingest(
            [
                collector_event(
                    h,
                    "instance",
                    vm.resource_id,
                    "compute.instance.delete.end",
                    T0 + minutes(10),
                    project_id=p.id,
                )
            ]
        )
        poll = T0 + minutes(60)
        await h.sync(poll)
        events = await events_of(h, "instance", vm.resource_id)
        assert [e["event_type"] for e in events] == ["compute.instance.delete.end", "sync.create"]
        assert parse_instant(events[-1]["timestamp"]) == poll


async def test_update_dated_at_poll_with_old_and_new_values(store: Store, tmp_path: Path) -> None:
    b, p, _ = small_world()
    vt = b.volume_type("ssd")
    vol = b.volume(p, vt, size_gb=20, created_at=T0 + minutes(1)).build()
    async with open_harness(b.build(), store, tmp_path) as h:
        await h.pipeline.ingest(
            [
                collector_event(
                    h,
                    "volume",
                    vol.resource_id,
                    "volume.create.end",
                    T0 + minutes(1),
                    project_id=p.id,
                    state="available",
                    size={"size_gb": 10, "type": "ssd"},
                )
            ]
        )
        poll = T0 + minutes(90)
        outcome = await h.sync(poll)
        assert outcome.stats["updated"] == 1
        update = (await events_of(h, "volume", vol.resource_id))[-1]
        assert update["event_type"] == "sync.update"
        assert parse_instant(update["timestamp"]) == poll
        assert update["payload"]["size"] == {"size_gb": 20, "type": "ssd"}
        provider = update["payload"]["provider"]
        assert provider["reason"] == "drift" and provider["sync_run_id"] == outcome.sync_run_id
        assert provider["changes"]["size"] == {
            "old": {"size_gb": 10, "type": "ssd"},
            "new": {"size_gb": 20, "type": "ssd"},
        }
        rows = await h.rows()
        assert rows[("volume", vol.resource_id)].size["size_gb"] == 20


async def test_reported_delete_dated_at_terminated_at(store: Store, tmp_path: Path) -> None:
    b, p, f = small_world()
    vm = b.instance(p, f, created_at=T0 + minutes(5)).terminate(T0 + minutes(70)).build()
    async with open_harness(b.build(), store, tmp_path) as h:
        await h.sync(T0 + minutes(60))
        second = await h.sync(T0 + minutes(80))
        assert second.stats["deleted"] == 1
        delete = (await events_of(h, "instance", vm.resource_id))[-1]
        assert delete["event_type"] == "sync.delete"
        assert parse_instant(delete["timestamp"]) == T0 + minutes(70)
        assert delete["payload"] == {
            "provider": {"reason": "reported delete", "sync_run_id": second.sync_run_id}
        }


async def test_first_run_asks_no_deleted_servers_and_dates_by_absence(store: Store, tmp_path: Path) -> None:
    b, p, f = small_world()
    vm = b.instance(p, f, created_at=T0 + minutes(5)).terminate(T0 + minutes(30)).build()
    async with open_harness(b.build(), store, tmp_path) as h:
        await h.pipeline.ingest(
            [
                collector_event(
                    h,
                    "instance",
                    vm.resource_id,
                    "compute.instance.create.end",
                    T0 + minutes(5),
                    project_id=p.id,
                    size={"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"},
                )
            ]
        )
        poll = T0 + minutes(60)
        await h.sync(poll)
        delete = (await events_of(h, "instance", vm.resource_id))[-1]
        assert delete["payload"]["provider"]["reason"] == "absent from a complete listing"
        assert parse_instant(delete["timestamp"]) == poll


async def test_deleted_servers_window_clamped_to_24_hours(store: Store, tmp_path: Path) -> None:
    b, p, f = small_world()
    early = b.instance(p, f, created_at=T0 + minutes(5)).terminate(T0 + timedelta(days=1)).build()
    late = b.instance(p, f, created_at=T0 + minutes(6)).terminate(T0 + timedelta(days=2, hours=12)).build()
    async with open_harness(b.build(), store, tmp_path) as h:
        await h.sync(T0 + minutes(60))
        poll = T0 + timedelta(days=3)
        await h.sync(poll)
        early_delete = (await events_of(h, "instance", early.resource_id))[-1]
        late_delete = (await events_of(h, "instance", late.resource_id))[-1]
        # Outside the clamped window: booked by absence at the poll. Inside: at terminated_at.
        assert parse_instant(early_delete["timestamp"]) == poll
        assert parse_instant(late_delete["timestamp"]) == T0 + timedelta(days=2, hours=12)


async def test_absence_delete_dated_at_poll(store: Store, tmp_path: Path) -> None:
    b, p, _ = small_world()
    fip = (
        b.floating_ip(p, address="203.0.113.9", created_at=T0 + minutes(1))
        .terminate(T0 + minutes(100))
        .build()
    )
    async with open_harness(b.build(), store, tmp_path) as h:
        await h.sync(T0 + minutes(60))
        poll = T0 + minutes(200)
        await h.sync(poll)
        delete = (await events_of(h, "floating_ip", fip.resource_id))[-1]
        assert delete["event_type"] == "sync.delete"
        assert parse_instant(delete["timestamp"]) == poll
        assert delete["payload"]["provider"]["reason"] == "absent from a complete listing"


async def test_correction_behind_newest_event_dated_one_microsecond_past_it(
    store: Store, tmp_path: Path
) -> None:
    b, p, f = small_world()
    vm = b.instance(p, f, created_at=T0 + minutes(5)).terminate(T0 + minutes(70)).build()
    async with open_harness(b.build(), store, tmp_path) as h:
        await h.sync(T0 + minutes(60))
        newest = T0 + minutes(75)  # a collector event the fold orders after the termination
        await h.pipeline.ingest(
            [
                collector_event(
                    h,
                    "instance",
                    vm.resource_id,
                    "compute.instance.power_off",
                    newest,
                    project_id=p.id,
                    state="shutoff",
                )
            ]
        )
        await h.sync(T0 + minutes(90))
        delete = (await events_of(h, "instance", vm.resource_id))[-1]
        assert delete["event_type"] == "sync.delete"
        assert delete["timestamp"] == format_instant(newest + timedelta(microseconds=1))
        assert delete["payload"]["provider"]["dated_past_newest_event"] == {
            "requested": format_instant(T0 + minutes(70))
        }


async def test_row_already_deleted_is_skipped_so_the_first_delete_stands(
    store: Store, tmp_path: Path
) -> None:
    b, p, f = small_world()
    vm = b.instance(p, f, created_at=T0 + minutes(5)).terminate(T0 + minutes(70)).build()
    async with open_harness(b.build(), store, tmp_path) as h:
        await h.sync(T0 + minutes(60))
        await h.pipeline.ingest(
            [
                collector_event(
                    h,
                    "instance",
                    vm.resource_id,
                    "compute.instance.delete.end",
                    T0 + minutes(72),
                    project_id=p.id,
                )
            ]
        )
        outcome = await h.sync(T0 + minutes(90))
        assert outcome.stats["deleted"] == 0
        types = [e["event_type"] for e in await events_of(h, "instance", vm.resource_id)]
        assert types == ["sync.create", "compute.instance.delete.end"]


async def test_told_instant_is_started_at_and_completed_at_is_the_wall_clock(
    store: Store, tmp_path: Path
) -> None:
    b, p, f = small_world()
    b.instance(p, f, created_at=T0 + minutes(5))
    async with open_harness(b.build(), store, tmp_path) as h:
        told = T0 + minutes(60)
        outcome = await h.sync(told)
        run = await h.run_row(outcome)
        assert run["started_at"] == told
        assert run["completed_at"] > told + timedelta(days=100)  # the wall clock, not the month's
        assert await h.store.last_completed_sync_started_at(h.cloud) == told


async def test_told_instant_behind_the_bound_widens_and_warns(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    b, p, f = small_world()
    b.instance(p, f, created_at=T0 + minutes(5))
    vm = b.instance(p, f, created_at=T0 + timedelta(hours=3)).terminate(T0 + timedelta(hours=4)).build()
    size = {"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"}
    async with open_harness(b.build(), store, tmp_path) as h:
        # The cloud's first run asks for no deleted servers, so the vm (gone by then, with no row) is
        # not seen; the bound is now 10 h in.
        await h.sync(T0 + timedelta(hours=10))
        await h.pipeline.ingest(
            [
                collector_event(
                    h,
                    "instance",
                    vm.resource_id,
                    "compute.instance.create.end",
                    T0 + timedelta(hours=3),
                    project_id=p.id,
                    size=size,
                )
            ]
        )
        caplog.set_level(logging.WARNING, logger="tally.reconcile")
        told = T0 + timedelta(hours=5)
        outcome = await h.sync(told, cloud_at=told)
        assert outcome.status is Status.COMPLETED
        assert any("behind the bound" in r.getMessage() for r in caplog.records)
        # The 24 h behind the told instant were asked for, so the deletion keeps nova's instant
        # instead of the poll an empty window would have left it to.
        delete = (await events_of(h, "instance", vm.resource_id))[-1]
        assert delete["payload"]["provider"]["reason"] == "reported delete"
        assert parse_instant(delete["timestamp"]) == T0 + timedelta(hours=4)
        assert await h.store.last_completed_sync_started_at(h.cloud) == T0 + timedelta(hours=10)


async def test_deletion_after_the_runs_instant_is_left_to_the_absence_pass(
    store: Store, tmp_path: Path
) -> None:
    b, p, f = small_world()
    vm = b.instance(p, f, created_at=T0 + minutes(5)).terminate(T0 + minutes(150)).build()
    async with open_harness(b.build(), store, tmp_path) as h:
        await h.sync(T0 + minutes(60))
        told = T0 + minutes(120)
        await h.sync(told, cloud_at=T0 + minutes(180))  # the cloud's present is past the told instant
        delete = (await events_of(h, "instance", vm.resource_id))[-1]
        assert delete["payload"]["provider"]["reason"] == "absent from a complete listing"
        assert parse_instant(delete["timestamp"]) == told


async def test_failed_run_does_not_move_the_bound(store: Store, tmp_path: Path) -> None:
    b, p, f = small_world()
    b.instance(p, f, created_at=T0 + minutes(5))
    async with open_harness(b.build(), store, tmp_path) as h:
        await h.sync(T0 + minutes(60))
        h.state.faults.down.add("block-storage")
        failed = await h.sync(T0 + minutes(120))
        assert failed.status is Status.FAILED
        assert await h.store.last_completed_sync_started_at(h.cloud) == T0 + minutes(60)
