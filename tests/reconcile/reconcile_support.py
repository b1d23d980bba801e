"""Test harness of the reconciliation: a fake cloud over real HTTP, a clouds.yaml, a store, a pipeline.

``open_harness(world, store)`` serves the fake cloud on an ephemeral port with
Hypercorn, writes a clouds.yaml naming its keystone (entries for the admin's
password, the application credentials and the member account), points
OS_CLIENT_CONFIG_FILE at it, and runs syncs through ``run_sync`` (``tally.reconcile._run``)
with the real ``OpenStackAdapter``. The fake's clock is driven by the harness
(``harness.at(t)``), so each sync sees the world at the instant it was told.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import yaml

from tally.actors import ActorContext
from tally.config import CloudEntry
from tally.core import ResourceKey, ResourceRow, deterministic_event_id, format_instant, sorted_events
from tally.ingest import IngestPipeline
from tally.openstack import OpenStackAdapter
from tally.reconcile import RunRequests, SchedulerRunner, SyncService, run_cloud_scheduler, run_requests
from tally.reconcile._run import RunSettings, run_sync
from tally.reconcile.internals import SyncOutcome
from tally.simulation import serve_fake_cloud
from tally.simulator.clock import VirtualClock
from tally.simulator.fakecloud import (
    MEMBER_PASSWORD,
    MEMBER_USER,
    FakeCloudState,
    admin_cloud_entry,
    create_fake_cloud_app,
)
from tally.simulator.world import World, WorldBuilder
from tally.store import Store

CLOUD = "os-test"
T0 = datetime(2026, 7, 1, tzinfo=UTC)
T_END = datetime(2026, 8, 1, tzinfo=UTC)


def builder() -> WorldBuilder:
    return WorldBuilder(cloud=CLOUD, period_from=T0, period_to=T_END)


@dataclass
class ManualWall:
    """A wall clock the test moves; the fake's virtual clock runs at factor 1 on it."""

    now: float = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Harness:
    store: Store
    pipeline: IngestPipeline
    state: FakeCloudState
    base_url: str
    clouds_yaml: Path
    wall: ManualWall
    settle_s: int = 0
    budget_s: float = 30.0
    # A cloud name of its own per test, so tests can share one PostgreSQL database.
    cloud: str = field(default_factory=lambda: f"{CLOUD}-{uuid.uuid4().hex[:8]}")
    entry: CloudEntry = field(init=False)

    def __post_init__(self) -> None:
        self.entry = self.entry_for("admin")

    def entry_for(self, os_cloud: str, **config: Any) -> CloudEntry:
        return CloudEntry(self.cloud, "openstack", "openstack", {"os_cloud": os_cloud, **config})

    def add_clouds_yaml_entry(self, name: str, entry: dict[str, Any]) -> None:
        """Add (or replace) the clouds.yaml entry ``name``."""
        clouds = yaml.safe_load(self.clouds_yaml.read_text())
        clouds["clouds"][name] = entry
        self.clouds_yaml.write_text(yaml.safe_dump(clouds))

    def at(self, instant: datetime) -> None:
        """Move the fake cloud's clock to ``instant``."""
        self.wall.now = (instant - T0).total_seconds()

    async def sync(
        self,
        at: datetime,
        *,
        entry: CloudEntry | None = None,
        config_error: str | None = None,
        cloud_at: datetime | None = None,
        min_gap_s: float | None = None,
    ) -> SyncOutcome:
        """Run one sync told ``at``; the fake cloud answers at ``cloud_at`` (default: ``at``);
        ``min_gap_s`` makes it a scheduled run's (``run_sync``)."""
        self.at(cloud_at or at)
        return await run_sync(
            entry or self.entry,
            store=self.store,
            pipeline=self.pipeline,
            open_adapter=OpenStackAdapter,
            settings=RunSettings(settle_s=self.settle_s, budget_s=self.budget_s),
            at=at,
            config_error=config_error,
            min_gap_s=min_gap_s,
        )

    async def rows(self) -> dict[tuple[str, str], ResourceRow]:
        return {
            (r.key.resource_type, r.key.resource_id): r
            for r in await self.store.resources_of_cloud(self.cloud)
        }

    async def run_row(self, outcome: SyncOutcome) -> dict[str, Any]:
        assert outcome.sync_run_id is not None
        row = await self.store.get_sync_run(outcome.sync_run_id)
        assert row is not None
        return row


def write_clouds_yaml(directory: Path, base_url: str, state: FakeCloudState) -> Path:
    accounts = state.accounts
    auth_url = f"{base_url}/v3"
    clouds: dict[str, Any] = {
        "admin": admin_cloud_entry(auth_url),
        "member": {
            "auth_type": "password",
            "auth": {
                "auth_url": auth_url,
                "username": MEMBER_USER,
                "password": MEMBER_PASSWORD,
                "project_id": accounts.member.project_id,
                "user_domain_name": "Default",
            },
            "region_name": "RegionOne",
        },
    }
    for cred in accounts.credentials.values():
        clouds[cred.name] = {
            "auth_type": "v3applicationcredential",
            "auth": {
                "auth_url": auth_url,
                "application_credential_id": cred.id,
                "application_credential_secret": cred.secret,
            },
            "region_name": "RegionOne",
        }
    clouds["no-secret"] = {
        "auth_type": "v3applicationcredential",
        "auth": {"auth_url": auth_url, "application_credential_id": "0" * 32},
    }
    path = directory / "clouds.yaml"
    path.write_text(yaml.safe_dump({"clouds": clouds}))
    return path


@asynccontextmanager
async def open_harness(
    world: World,
    store: Store,
    directory: Path,
    *,
    settle_s: int = 0,
    prepare: Callable[[FakeCloudState], None] | None = None,
    serve: Callable[..., Awaitable[None]] = serve_fake_cloud,
    scheme: str = "http",
) -> AsyncIterator[Harness]:
    """The fake served by ``serve(app, host, port, task_status=...)``: another one may serve it over TLS."""
    wall = ManualWall()
    clock = VirtualClock(T0, 1.0, wall=wall)
    app = create_fake_cloud_app(world, clock)
    state: FakeCloudState = app.config["FAKE_CLOUD"]
    if prepare is not None:
        prepare(state)
    previous = os.environ.get("OS_CLIENT_CONFIG_FILE")
    async with anyio.create_task_group() as tg:
        port = await tg.start(serve, app, "127.0.0.1", 0)
        base_url = f"{scheme}://127.0.0.1:{port}"
        path = write_clouds_yaml(directory, base_url, state)
        os.environ["OS_CLIENT_CONFIG_FILE"] = str(path)
        try:
            yield Harness(
                store, IngestPipeline(store, require_size_schema=False), state, base_url, path, wall, settle_s
            )
        finally:
            if previous is None:
                os.environ.pop("OS_CLIENT_CONFIG_FILE", None)
            else:
                os.environ["OS_CLIENT_CONFIG_FILE"] = previous
            tg.cancel_scope.cancel()


def minutes(n: float) -> timedelta:
    return timedelta(minutes=n)


def collector_event(
    h: Harness,
    resource_type: str,
    resource_id: str,
    event_type: str,
    at: datetime,
    *,
    project_id: str,
    state: str | None = "active",
    size: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A collector event's wire object, as the collector would have delivered it."""
    payload: dict[str, Any] = {}
    if state is not None and not event_type.endswith("delete.end"):
        payload["state"] = state
    if size is not None:
        payload["size"] = size
    return {
        "event_id": deterministic_event_id("openstack", h.cloud, resource_id, event_type, at),
        "timestamp": format_instant(at),
        "event_type": event_type,
        "platform": "openstack",
        "cloud": h.cloud,
        "resource_type": resource_type,
        "resource_id": resource_id,
        "project_id": project_id,
        "payload": payload,
    }


async def events_of(h: Harness, resource_type: str, resource_id: str) -> list[Any]:
    """The key's stored events in fold order (their wire objects)."""
    stored = await h.store.lifecycle_events(ResourceKey(h.cloud, resource_type, resource_id))
    return [e.event.to_wire() for e in sorted_events(stored)]


@asynccontextmanager
async def scheduler_of(
    service: SyncService, cloud: str
) -> AsyncIterator[tuple[SchedulerRunner, RunRequests]]:
    """The cloud's scheduler actor running, as the daemon runs it, and the runner the route asks it
    through (with its mailbox); stopped on exit."""
    requests = run_requests(cloud)
    stopping, started = anyio.Event(), anyio.Event()
    ctx = ActorContext(f"sync-scheduler:{cloud}", stopping, started.set)
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: run_cloud_scheduler(service, cloud, ctx, requests=requests))
        with anyio.fail_after(10):
            await started.wait()
        try:
            yield SchedulerRunner({cloud: requests}), requests
        finally:
            stopping.set()
