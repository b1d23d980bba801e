"""Fixtures of the ingest tests: a migrated store on SQLite and on PostgreSQL, and wire-event builders.

PostgreSQL: one database per test session (dropped after), one schema per test.
With CI set, an unreachable PostgreSQL fails the run instead of skipping.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
import pytest

from tally.store import Store, open_store

PG_ADMIN = os.environ.get("TALLY_TEST_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def ingest_pg_database() -> Iterator[str]:
    try:
        admin = psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is not reachable at {PG_ADMIN}: {exc}")
        pytest.skip(f"PostgreSQL is not reachable at {PG_ADMIN}: {exc}")
    name = f"tally_test_ingest_{uuid.uuid4().hex[:12]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    finally:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        admin.close()


@pytest.fixture(params=["sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A migrated store of each backend."""
    if request.param == "sqlite":
        async with open_store(f"sqlite:///{tmp_path / 'store.sqlite3'}") as opened:
            await opened.migrate_up()
            yield opened
        return
    database = request.getfixturevalue("ingest_pg_database")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        async with open_store(f"{database}?options={quote(f'-csearch_path={schema}')}") as opened:
            await opened.migrate_up()
            yield opened
    finally:
        with psycopg.connect(database, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


INSTANCE_SIZE = {"vcpus": 2, "ram_gb": 4, "disk_gb": 20, "flavor": "m1.medium"}


def wire(
    event_id: str,
    event_type: str = "compute.instance.create.end",
    timestamp: str = "2026-03-01T10:00:00Z",
    **overrides: Any,
) -> dict[str, Any]:
    """A valid wire event of an instance; members and payload overridable."""
    item: dict[str, Any] = {
        "event_id": event_id,
        "timestamp": timestamp,
        "event_type": event_type,
        "platform": "openstack",
        "cloud": "os-dev",
        "resource_type": "instance",
        "resource_id": "vm-1",
        "project_id": "p-1",
        "payload": {"state": "active", "size": dict(INSTANCE_SIZE)},
    }
    item.update(overrides)
    return item


@pytest.fixture
def make_wire() -> Any:
    return wire
