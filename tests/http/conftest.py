"""Fixtures of the Reporting API tests: a migrated store on SQLite and on PostgreSQL, the app, tokens.

Every test that takes ``api`` runs twice, once per backend. PostgreSQL tests
create a database with a unique name and drop it after; with ``CI`` set a
PostgreSQL that does not answer fails the run instead of skipping it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import psycopg
import pytest
from http_support import Api, build_api

from tally.store import Store, open_store

PG_ADMIN = os.environ.get("TALLY_TEST_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _pg_available() -> bool:
    try:
        with psycopg.connect(PG_ADMIN, connect_timeout=3):
            return True
    except psycopg.OperationalError:
        return False


def _admin(sql: str) -> None:
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(sql)


def _url(name: str) -> str:
    return PG_ADMIN.rsplit("/", 1)[0] + "/" + name


SEEDED_TYPES = ("instance", "volume", "floating_ip", "image", "loadbalancer")


@pytest.fixture(scope="session")
def http_pg_database() -> Iterator[str]:
    """One migrated database per run (creating one per test costs seconds on a loaded machine)."""
    if not _pg_available():
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL does not answer at {PG_ADMIN}")
        pytest.skip("PostgreSQL does not answer")
    name = f"tally_http_{uuid.uuid4().hex[:12]}"
    _admin(f'CREATE DATABASE "{name}"')

    async def migrate() -> None:
        async with open_store(_url(name), max_conns=1) as store:
            await store.migrate_up()

    try:
        anyio.run(migrate)
        yield _url(name)
    finally:
        _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def http_pg_url(http_pg_database: str) -> str:
    """The run's database emptied of everything but the schema and the seeded size schemas."""
    with psycopg.connect(http_pg_database, autocommit=True) as conn:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
                "AND tablename NOT IN ('schema_migrations', 'resource_types')"
            )
        ]
        conn.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in tables) + " CASCADE")
        conn.execute(
            "DELETE FROM resource_types WHERE platform <> 'openstack' OR NOT (resource_type = ANY(%s))",
            [list(SEEDED_TYPES)],
        )
    return http_pg_database


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'tally.sqlite3'}"
    return str(request.getfixturevalue("http_pg_url"))


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[Store]:
    async with open_store(store_url, max_conns=4) as opened:
        await opened.migrate_up()
        yield opened


@pytest.fixture
async def api(store: Store) -> Api:
    return await build_api(store)
