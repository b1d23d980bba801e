"""A run that takes a free lock first fails the rows a stopped holder left ``running``; a scheduled
run then skips when the cloud was synced within the gap (``_handover``), on both backends."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from prometheus_client import REGISTRY
from reconcile_support import T0, builder, minutes, open_harness

from tally.actors import ActorContext
from tally.config import CloudEntry
from tally.reconcile import Status
from tally.reconcile._run import RunSettings
from tally.reconcile._scheduler import run_cloud_scheduler
from tally.reconcile._service import SyncService
from tally.simulator.world import World
from tally.store import Store, open_store
from tally.store._sqlite import sqlite_stamp

pytestmark = pytest.mark.anyio


def world() -> World:
    b = builder()
    p = b.project("alpha")
    b.instance(p, b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20), created_at=T0 + minutes(1))
    return b.build()


def runs_total(cloud: str, status: str) -> float:
    return REGISTRY.get_sample_value("tally_sync_runs_total", {"cloud": cloud, "status": status}) or 0.0


async def test_a_run_taking_the_free_lock_fails_the_row_its_stopped_holder_left(
    store: Store, tmp_path: Path
) -> None:
    async with open_harness(world(), store, tmp_path) as h:
        # What a replica SIGKILLed mid-sync leaves: its row, and no lock (its session, or lease, is gone).
        stale = await store.start_sync_run(h.cloud, T0 + minutes(30))
        failed_before = runs_total(h.cloud, "failed")
        outcome = await h.sync(T0 + minutes(60))
        assert outcome.status is Status.COMPLETED
        row = await store.get_sync_run(stale)
        assert row is not None and (row["status"], row["completed_at"]) == ("failed", None)
        [reason] = row["stats"]["errors"]
        assert reason.startswith(f"sync run {stale} never ended: the replica that ran it stopped")
        assert runs_total(h.cloud, "failed") == failed_before + 1
        assert {r["status"] for r in await store.list_sync_runs(h.cloud)} == {"failed", "completed"}


async def test_a_live_holders_running_row_is_left_alone(store: Store, store_url: str, tmp_path: Path) -> None:
    async with open_harness(world(), store, tmp_path) as h, open_store(store_url) as replica:
        async with replica.sync_lock(h.cloud):
            running = await replica.start_sync_run(h.cloud, T0 + minutes(30))
            outcome = await h.sync(T0 + minutes(60))
        assert outcome.status is Status.LOCK_HELD
        row = await store.get_sync_run(running)
        assert row is not None and row["status"] == "running"


async def test_sqlite_daemon_restarted_after_a_crash_fails_its_old_row_once_the_lease_ran_out(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tally.sqlite3"
    async with open_store(f"sqlite:///{path}") as store:
        await store.migrate_up()
        async with open_harness(world(), store, tmp_path) as h:
            stale = await store.start_sync_run(h.cloud, T0 + minutes(30))
            lease = datetime.now(UTC) + timedelta(minutes=1)
            with sqlite3.connect(path) as db:  # the crashed process's lease, still running
                db.execute("INSERT INTO sync_locks VALUES (?, 'crashed', ?)", (h.cloud, sqlite_stamp(lease)))
            assert (await h.sync(T0 + minutes(60))).status is Status.LOCK_HELD
            assert (await store.get_sync_run(stale) or {})["status"] == "running"
            with sqlite3.connect(path) as db:  # ... and run out
                db.execute("UPDATE sync_locks SET expires_at = ?", (sqlite_stamp(datetime.now(UTC)),))
            assert (await h.sync(T0 + minutes(61))).status is Status.COMPLETED
            assert (await store.get_sync_run(stale) or {})["status"] == "failed"


async def test_a_scheduled_run_skips_a_cloud_synced_within_the_gap(store: Store, tmp_path: Path) -> None:
    async with open_harness(world(), store, tmp_path) as h:
        first = await h.sync(T0 + minutes(60), min_gap_s=480)
        assert first.status is Status.COMPLETED
        skipped_before = runs_total(h.cloud, "skipped")
        soon = await h.sync(T0 + minutes(67), min_gap_s=480)
        assert soon.status is Status.NOT_DUE and soon.sync_run_id is None
        assert runs_total(h.cloud, "skipped") == skipped_before + 1
        assert len(await store.list_sync_runs(h.cloud)) == 1  # a skip writes no row
        assert (await h.sync(T0 + minutes(67))).status is Status.COMPLETED  # on request: always runs
        assert (await h.sync(T0 + minutes(74), min_gap_s=480)).status is Status.NOT_DUE
        assert (await h.sync(T0 + minutes(67 + 8), min_gap_s=480)).status is Status.COMPLETED


async def test_a_row_that_never_ended_does_not_make_the_cloud_synced(store: Store, tmp_path: Path) -> None:
    async with open_harness(world(), store, tmp_path) as h:
        await store.start_sync_run(h.cloud, T0 + minutes(59))
        assert (await h.sync(T0 + minutes(60), min_gap_s=480)).status is Status.COMPLETED


async def test_an_on_request_clouds_scheduler_fails_stale_rows_at_start(store: Store, tmp_path: Path) -> None:
    async with open_harness(world(), store, tmp_path) as h:
        stale = await store.start_sync_run(h.cloud, T0 + minutes(30))
        entry = CloudEntry(h.cloud, "openstack", "openstack", {"os_cloud": "admin"}, sync_interval_s=0)
        service = SyncService([entry], store=store, pipeline=h.pipeline, settings=RunSettings(settle_s=0))
        stopping = anyio.Event()
        ctx = ActorContext("sync-scheduler", stopping, lambda: None)
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: run_cloud_scheduler(service, h.cloud, ctx))
            with anyio.fail_after(10):
                while (await store.get_sync_run(stale) or {})["status"] == "running":  # noqa: ASYNC110
                    await anyio.sleep(0.05)
            stopping.set()
        assert [r["status"] for r in await store.list_sync_runs(h.cloud)] == ["failed"]  # and nothing ran


async def test_an_on_request_clouds_scheduler_has_taken_over_when_it_says_it_started(
    store: Store, tmp_path: Path
) -> None:
    """The daemon is ready once every actor started: a run asked for then must find the lock free."""
    async with open_harness(world(), store, tmp_path) as h:
        stale = await store.start_sync_run(h.cloud, T0 + minutes(30))
        entry = CloudEntry(h.cloud, "openstack", "openstack", {"os_cloud": "admin"}, sync_interval_s=0)
        service = SyncService([entry], store=store, pipeline=h.pipeline, settings=RunSettings(settle_s=0))
        stopping, started = anyio.Event(), anyio.Event()
        ctx = ActorContext("sync-scheduler", stopping, started.set)
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: run_cloud_scheduler(service, h.cloud, ctx))
            with anyio.fail_after(10):
                await started.wait()
            assert (await store.get_sync_run(stale) or {})["status"] == "failed"
            assert (await h.sync(T0 + minutes(60))).status is Status.COMPLETED
            stopping.set()
