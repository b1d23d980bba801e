"""Helpers of the Reporting API tests: building the app over a store, the seeded secrets, event factories."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from anyio.from_thread import start_blocking_portal
from pydantic import SecretStr
from quart import Quart
from quart.typing import TestClientProtocol

from tally.config import Settings
from tally.http import (
    Readiness,
    ReportingServices,
    SyncRunner,
    create_reporting_app,
    health_blueprint,
    serve_quart,
)
from tally.http.internals import KeystoneTokens
from tally.ingest import IngestPipeline
from tally.store import Store, hash_secret, open_store

INTERNAL = "internal-secret"
ADMIN = "admin-secret"
READER = "reader-secret"
INGEST = "ingest-secret"


def make_settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {"reporting_internal_token": SecretStr(INTERNAL), "reporting_sync_budget_s": 5}
    values.update(overrides)
    return Settings(**values)


@dataclass
class Api:
    """The app under test, its store and a client, with the secrets of the seeded callers."""

    app: Quart
    store: Store
    client: TestClientProtocol
    services: ReportingServices | None = None

    @staticmethod
    def bearer(secret: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {secret}"}

    async def get(self, path: str, secret: str = ADMIN, **kw: Any) -> Any:
        return await self.client.get(path, headers=self.bearer(secret), **kw)

    async def post(self, path: str, secret: str = ADMIN, **kw: Any) -> Any:
        return await self.client.post(path, headers=self.bearer(secret), **kw)


async def build_api(
    store: Store,
    *,
    runner: SyncRunner | None = None,
    require_size_schema: bool = False,
    seed: bool = True,
    keystone: KeystoneTokens | None = None,
    **settings: Any,
) -> Api:
    """An app over ``store``; ``seed`` creates the admin, reader and ingest secrets (once per store)."""
    services = ReportingServices(
        store=store,
        pipeline=IngestPipeline(store, require_size_schema=require_size_schema),
        settings=make_settings(**settings),
        sync_runner=runner,
        keystone=keystone,
    )
    app = create_reporting_app(services)
    app.register_blueprint(health_blueprint(Readiness()))  # as the daemon serves it
    if seed:
        await store.create_api_token(token_hash=hash_secret(ADMIN), role="admin")
        await store.create_api_token(token_hash=hash_secret(READER), role="read_all")
        await store.create_ingest_credential(
            platform="openstack", cloud="os-dev", token_hash=hash_secret(INGEST)
        )
    return Api(app=app, store=store, client=app.test_client(), services=services)


def event(
    resource_id: str = "vm-1",
    *,
    event_type: str = "compute.instance.create.end",
    timestamp: str = "2026-03-01T10:00:00Z",
    state: str | None = "active",
    size: dict[str, Any] | None = None,
    project_id: str = "p-1",
    cloud: str = "os-dev",
    resource_type: str = "instance",
    event_id: str | None = None,
) -> dict[str, Any]:
    payload: dict[str, Any] = {}
    if state is not None:
        payload["state"] = state
    if size is not None:
        payload["size"] = size
    elif "create" in event_type.split("."):
        payload["size"] = {"vcpus": 2, "ram_gb": 4, "disk_gb": 20, "flavor": "m1.medium"}
    return {
        "event_id": event_id or f"{resource_id}-{event_type}-{timestamp}",
        "timestamp": timestamp,
        "event_type": event_type,
        "platform": "openstack",
        "cloud": cloud,
        "resource_type": resource_type,
        "resource_id": resource_id,
        "project_id": project_id,
        "payload": payload,
    }


@dataclass
class LiveServer:
    """The app served by Hypercorn on an ephemeral port, in an event loop of its own thread."""

    base_url: str
    api: Api


@contextmanager
def live_server(store_url: str, *, runner: SyncRunner | None = None, **settings: Any) -> Iterator[LiveServer]:
    with (
        start_blocking_portal(backend="asyncio") as portal,
        portal.wrap_async_context_manager(_migrated(store_url)) as store,
    ):
        api = portal.call(partial(build_api, store, runner=runner, **settings))
        future, port = portal.start_task(serve_quart, api.app, "127.0.0.1", 0)
        try:
            yield LiveServer(base_url=f"http://127.0.0.1:{port}", api=api)
        finally:
            future.cancel()


@asynccontextmanager
async def _migrated(store_url: str) -> AsyncIterator[Store]:
    async with open_store(store_url, max_conns=4) as store:
        await store.migrate_up()
        yield store
