"""Fixtures of the store contract suite: every test runs on SQLite and on the machine's PostgreSQL.

PostgreSQL: one fresh database per test session (dropped after); each test gets
its own schema in it (search_path), so tests never see each other's rows.
With CI set, an unreachable PostgreSQL fails the run instead of skipping.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest

from tally.core import Event, parse_event
from tally.store import Store, open_store

PG_ADMIN = os.environ.get("TALLY_TEST_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def store_pg_database() -> Iterator[str]:
    """The URL of a database created for this test session."""
    try:
        admin = psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is not reachable at {PG_ADMIN}: {exc}")
        pytest.skip(f"PostgreSQL is not reachable at {PG_ADMIN}: {exc}")
    name = f"tally_test_store_{uuid.uuid4().hex[:12]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    finally:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        admin.close()


def pg_schema_url(database_url: str) -> tuple[str, str]:
    """A new schema in the session database and a URL whose connections use it."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    return schema, f"{database_url}?options={quote(f'-csearch_path={schema}')}"


def drop_pg_schema(database_url: str, schema: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty store of each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.sqlite3'}"
        return
    database = request.getfixturevalue("store_pg_database")
    schema, url = pg_schema_url(database)
    try:
        yield url
    finally:
        drop_pg_schema(database, schema)


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[Store]:
    """A store of each backend with every migration applied."""
    async with open_store(store_url) as opened:
        await opened.migrate_up()
        yield opened


class EventFactory:
    """Builds valid events of one resource, each with a fresh id unless given."""

    def __init__(self) -> None:
        self.counter = 0

    def __call__(
        self,
        event_type: str = "compute.instance.update",
        at: str = "2026-03-01T10:00:00Z",
        *,
        resource_id: str = "vm-1",
        cloud: str = "os-dev",
        resource_type: str = "instance",
        project_id: str = "p-1",
        event_id: str | None = None,
        **payload: object,
    ) -> Event:
        self.counter += 1
        if "create" in event_type.split(".") and "size" not in payload:
            payload["size"] = {"vcpus": 1, "ram_gb": 2, "disk_gb": 10, "flavor": "m1.small"}
        if "delete" not in event_type.split(".") and "state" not in payload:
            payload["state"] = "active"
        return parse_event(
            {
                "event_id": event_id or f"ev-{self.counter}",
                "timestamp": at,
                "event_type": event_type,
                "platform": "openstack",
                "cloud": cloud,
                "resource_type": resource_type,
                "resource_id": resource_id,
                "project_id": project_id,
                "payload": payload,
            }
        )


@pytest.fixture
def make_event() -> EventFactory:
    return EventFactory()
