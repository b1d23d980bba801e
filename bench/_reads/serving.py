"""The servers ``bench.reads`` reads from, each run as ``python -m bench.reads --serve KIND ARG`` (it
prints its port and serves until its stdin closes): ``api`` (the Reporting API app over the store),
``floor`` (the same SQL behind a minimal ASGI app), ``keystone`` (the fake cloud's keystone) and
``canned`` (a canned page, the load generator's ceiling).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import orjson
import psycopg
from psycopg_pool import AsyncConnectionPool

from bench._reads import KEYSTONE_CLOUDS_YAML, PAGE
from tally.app import ingest_pipeline
from tally.config import Settings
from tally.http import ReportingServices, create_reporting_app, serve_quart
from tally.http.internals import KeystoneTokens, TallyPolicy
from tally.openstack import TokenChecker, resolve_cloud
from tally.simulation import serve_fake_cloud
from tally.store import open_store
from tally.store._pg_pages import (
    EVENT_JSON_SELECT,
    ROW_JSON_SELECT,
    RawJsonb,
    events_json_page,
    resources_json_page,
)

POOL_SIZE = Settings().reporting_db_max_conns  # the daemon's default

# -- the floor: the same SQL behind a minimal ASGI app --------------------------------------------------
# The statements the store sends for an unfiltered first page, and its rows-to-objects step: the floor
# leaves out only what the API adds around them (routing, authentication, validation, Quart).
FLOOR_SQL = {
    "/api/v1/events": f"SELECT {EVENT_JSON_SELECT} FROM events WHERE TRUE "
    "ORDER BY timestamp, event_id LIMIT %s",
    "/api/v1/resources": f"SELECT {ROW_JSON_SELECT} FROM current_resources WHERE deleted_at IS NULL "
    "ORDER BY cloud, resource_type, resource_id LIMIT %s",
}
FLOOR_PAGE: dict[str, Any] = {"/api/v1/events": events_json_page, "/api/v1/resources": resources_json_page}


class FloorApp:
    """ASGI: the page's SQL on a pooled connection, the rows as JSON; nothing else."""

    name = "floor"  # serve_quart logs the app's name

    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self.pool = pool

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        path = scope["path"]
        async with self.pool.connection() as conn:
            cursor = await conn.execute(FLOOR_SQL[path], [PAGE + 1])
            rows = await cursor.fetchall()
        page = FLOOR_PAGE[path](rows, PAGE)
        answer = {"items": page.items, "next_cursor": "x" if page.next_key is not None else None}
        body = orjson.dumps(answer, option=orjson.OPT_SORT_KEYS) + b"\n"
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


async def _configure_floor(conn: psycopg.AsyncConnection[Any]) -> None:
    conn.adapters.register_loader("jsonb", RawJsonb)  # the pages parse the documents, as the store's do
    await conn.execute("SET TIME ZONE 'UTC'")


# -- the servers (each run as ``--serve KIND URL``: prints its port, serves until stdin closes) --------
async def serve(kind: str, url: str) -> None:
    async with contextlib.AsyncExitStack() as stack, anyio.create_task_group() as tg:
        if kind == "api":
            store = await stack.enter_async_context(open_store(url, max_conns=POOL_SIZE))
            settings = Settings(reporting_internal_token=None)
            services = ReportingServices(
                store=store,
                pipeline=ingest_pipeline(store, require_size_schema=False),
                settings=settings,
                keystone=_keystone_tokens(),
            )
            port = await tg.start(serve_quart, create_reporting_app(services), "127.0.0.1", 0)
        elif kind == "keystone":
            port = await tg.start(serve_fake_cloud, _fake_keystone())
        elif kind == "floor":
            pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                url,
                min_size=1,
                max_size=POOL_SIZE,
                open=False,
                kwargs={"autocommit": True},
                configure=_configure_floor,
            )
            await stack.enter_async_context(pool)
            port = await tg.start(serve_quart, FloorApp(pool), "127.0.0.1", 0)
        else:
            port = await tg.start(serve_canned, int(url))
        print(port, flush=True)
        await anyio.to_thread.run_sync(sys.stdin.read)  # the parent closes stdin to stop us
        tg.cancel_scope.cancel()


def _keystone_tokens() -> KeystoneTokens | None:
    clouds_yaml = os.environ.get(KEYSTONE_CLOUDS_YAML)
    if not clouds_yaml:
        return None
    cloud = resolve_cloud("admin", env={"OS_CLIENT_CONFIG_FILE": clouds_yaml})
    return KeystoneTokens({"os-bench": TokenChecker(cloud, timeout_s=5)}, TallyPolicy(), cache_s=300)


def _fake_keystone() -> Any:
    from tally.simulator import WorldBuilder, create_fake_cloud_app

    builder = WorldBuilder(
        cloud="os-bench",
        period_from=datetime(2026, 1, 1, tzinfo=UTC),
        period_to=datetime(2026, 2, 1, tzinfo=UTC),
    )
    builder.project("bench")
    return create_fake_cloud_app(builder.build())


def keystone_token(port: int, directory: Path) -> tuple[str, Path]:
    """An admin's keystone token of the fake keystone on ``port``, and the clouds.yaml naming it."""
    import httpx
    import yaml

    from tally.simulator.fakecloud import ADMIN_PASSWORD, ADMIN_USER, admin_cloud_entry

    auth_url = f"http://127.0.0.1:{port}/v3"
    clouds_yaml = directory / "clouds.yaml"
    clouds_yaml.write_text(yaml.safe_dump({"clouds": {"admin": admin_cloud_entry(auth_url)}}))
    password = {"user": {"name": ADMIN_USER, "domain": {"name": "Default"}, "password": ADMIN_PASSWORD}}
    scope = {"project": {"name": "service", "domain": {"name": "Default"}}}
    body = {"auth": {"identity": {"methods": ["password"], "password": password}, "scope": scope}}
    answer = httpx.post(f"{auth_url}/auth/tokens", json=body)
    answer.raise_for_status()
    return answer.headers["X-Subject-Token"], clouds_yaml


async def serve_canned(size: int, *, task_status: Any) -> None:
    """The load generator's ceiling: a canned 200 of ``size`` bytes for every request, at once."""
    body = b"x" * size
    answer = b"HTTP/1.1 200 \r\ncontent-length: %d\r\ncontent-type: application/json\r\n\r\n%s" % (size, body)

    class Canned(asyncio.Protocol):
        def connection_made(self, transport: Any) -> None:
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            for _ in range(data.count(b"\r\n\r\n")):
                self.transport.write(answer)

    server = await asyncio.get_running_loop().create_server(Canned, "127.0.0.1", 0)
    task_status.started(server.sockets[0].getsockname()[1])
    await anyio.sleep_forever()
