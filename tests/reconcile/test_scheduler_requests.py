"""Runs on request through the cloud's scheduler actor: ``POST /internal/sync`` asks its mailbox.

The actor is the one place the cloud's runs start in the process: a request that finds a run in
progress is answered 409 at once, a scheduled tick that finds a requested run skips, and a caller
that goes away cancels the run it asked for.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from prometheus_client import REGISTRY
from pydantic import SecretStr
from reconcile_support import T0, Harness, builder, minutes, open_harness, scheduler_of

from tally.actors import ActorContext
from tally.config import CloudEntry, Settings
from tally.http import ReportingServices, create_reporting_app
from tally.reconcile import (
    RunRequests,
    SchedulerRunner,
    SyncNotStarted,
    SyncService,
    UnknownCloud,
    run_cloud_scheduler,
    run_requests,
)
from tally.reconcile._run import RunSettings
from tally.simulator.fakecloud import FakeCloudState
from tally.store import Store

pytestmark = pytest.mark.anyio

INTERNAL = "internal-secret"


def slow_compute(state: FakeCloudState) -> None:
    state.faults.slow["compute"] = 3.0


def runs_total(cloud: str, status: str) -> float:
    return REGISTRY.get_sample_value("tally_sync_runs_total", {"cloud": cloud, "status": status}) or 0.0


@asynccontextmanager
async def on_request(h: Harness) -> AsyncIterator[tuple[SchedulerRunner, RunRequests]]:
    """The scheduler of ``h``'s cloud, synced only on request, and the route's runner."""
    entry = CloudEntry(h.cloud, "openstack", "openstack", {"os_cloud": "admin"}, sync_interval_s=0)
    service = SyncService([entry], store=h.store, pipeline=h.pipeline, settings=RunSettings(settle_s=0))
    async with scheduler_of(service, h.cloud) as running:
        yield running


async def statuses(store: Store, cloud: str) -> list[str]:
    return [r["status"] for r in await store.list_sync_runs(cloud)]


async def test_a_requested_run_is_run_by_the_scheduler_and_answered(store: Store, tmp_path: Path) -> None:
    b = builder()
    p = b.project("alpha")
    b.volume(p, b.volume_type("ssd"), size_gb=1, created_at=T0 + minutes(1))
    async with open_harness(b.build(), store, tmp_path) as h, on_request(h) as (runner, _):
        h.at(T0 + minutes(60))
        outcome = await runner.run(h.cloud, T0 + minutes(60))
        assert not outcome.failed and outcome.stats["created"] == 1
        row = await store.get_sync_run(outcome.sync_run_id)
        assert row is not None and row["status"] == "completed"
        with pytest.raises(UnknownCloud):
            await runner.run("os-nowhere", None)


async def test_a_request_while_a_run_is_in_progress_is_answered_409_at_once(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "tally.reconcile")
    b = builder()
    b.project("alpha")
    async with (
        open_harness(b.build(), store, tmp_path, prepare=slow_compute) as h,
        on_request(h) as (runner, _),
    ):
        settings = Settings(reporting_internal_token=SecretStr(INTERNAL), reporting_sync_allow_at=True)
        client = create_reporting_app(ReportingServices(store, h.pipeline, settings, runner)).test_client()
        auth = {"Authorization": f"Bearer {INTERNAL}"}
        h.at(T0 + minutes(60))
        answers: list[int] = []
        async with anyio.create_task_group() as tg:

            async def first() -> None:
                body = {"at": "2026-07-01T01:00:00Z"}
                answers.append(
                    (await client.post(f"/internal/sync/{h.cloud}", headers=auth, json=body)).status_code
                )

            tg.start_soon(first)
            with anyio.fail_after(10):
                while await statuses(store, h.cloud) != ["running"]:  # noqa: ASYNC110
                    await anyio.sleep(0.05)
            with anyio.fail_after(1):  # not held until the first run ends
                second = await client.post(f"/internal/sync/{h.cloud}", headers=auth)
            assert second.status_code == 409
            assert (await second.get_json())["detail"] == "a sync for this cloud is already running"
        assert answers == [200]
        assert await statuses(store, h.cloud) == ["completed"]  # the second never started a run
        assert any("sync already running in this process" in r.getMessage() for r in caplog.records)


async def test_a_caller_that_goes_away_cancels_its_run(store: Store, tmp_path: Path) -> None:
    b = builder()
    b.project("alpha")
    async with (
        open_harness(b.build(), store, tmp_path, prepare=slow_compute) as h,
        on_request(h) as (runner, _),
    ):
        h.at(T0 + minutes(60))
        with anyio.move_on_after(1.0):  # the client that asked went away
            await runner.run(h.cloud, T0 + minutes(60))
        with anyio.fail_after(5):
            while await statuses(store, h.cloud) != ["failed"]:  # noqa: ASYNC110
                await anyio.sleep(0.05)
        (row,) = await store.list_sync_runs(h.cloud)
        assert row["stats"]["errors"] == [f"the run of {h.cloud} was cancelled while enumerating server"]
        # The actor is free again: the next request runs.
        h.state.faults.slow.clear()
        outcome = await runner.run(h.cloud, T0 + minutes(61))
        assert not outcome.failed


async def test_a_scheduled_tick_skips_while_a_requested_run_is_in_progress(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "tally.reconcile")
    b = builder()
    b.project("alpha")
    async with open_harness(b.build(), store, tmp_path, prepare=slow_compute) as h:
        h.at(T0 + minutes(60))
        entry = CloudEntry(h.cloud, "openstack", "openstack", {"os_cloud": "admin"}, sync_interval_s=3600)
        service = SyncService([entry], store=store, pipeline=h.pipeline, settings=RunSettings(settle_s=0))
        requests = run_requests(h.cloud)
        runner = SchedulerRunner({h.cloud: requests})
        skipped = runs_total(h.cloud, "skipped")
        stopping = anyio.Event()
        ctx = ActorContext("sync-scheduler", stopping, lambda: None)
        async with anyio.create_task_group() as tg:
            # Asked before the actor runs: it takes the request before its first tick (the tick waits
            # for the size names first), which then finds the run in progress.
            tg.start_soon(runner.run, h.cloud, T0 + minutes(60))
            await anyio.lowlevel.checkpoint()
            tg.start_soon(lambda: run_cloud_scheduler(service, h.cloud, ctx, requests=requests))
            with anyio.fail_after(10):
                while runs_total(h.cloud, "skipped") == skipped:  # noqa: ASYNC110
                    await anyio.sleep(0.05)
            with anyio.fail_after(10):
                while await statuses(store, h.cloud) != ["completed"]:  # noqa: ASYNC110
                    await anyio.sleep(0.05)
            stopping.set()
        assert any(
            "scheduled sync skipped" in r.getMessage() and "lock_held" in r.getMessage()
            for r in caplog.records
        )


async def test_a_stopped_scheduler_answers_503(store: Store, tmp_path: Path) -> None:
    b = builder()
    b.project("alpha")
    async with open_harness(b.build(), store, tmp_path) as h:
        async with on_request(h) as (runner, _):
            pass  # stopped on leaving
        with pytest.raises(SyncNotStarted, match="scheduler stopped"), anyio.fail_after(2):
            await runner.run(h.cloud, None)
        assert await statuses(store, h.cloud) == []
