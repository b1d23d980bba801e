"""Fixtures of the Reporting API tests: a migrated store on SQLite and on PostgreSQL, the app, tokens.

Every test that takes ``api`` runs twice, once per backend. PostgreSQL tests share
one migrated schema of the run's database, emptied before each test; with ``CI`` set a
PostgreSQL that does not answer fails the run instead of skipping it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import psycopg
import pytest
from http_support import Api, build_api

from tally.store import Store, open_store

SEEDED_TYPES = ("instance", "volume", "floating_ip", "image", "loadbalancer")


@pytest.fixture(scope="session")
def http_pg_database(pg_session_schema: Callable[[str], str]) -> str:
    """One migrated schema per run (creating one per test costs seconds on a loaded machine)."""
    url = pg_session_schema("http")

    async def migrate() -> None:
        async with open_store(url, max_conns=1) as store:
            await store.migrate_up()

    anyio.run(migrate)
    return url


@pytest.fixture
def http_pg_url(http_pg_database: str) -> str:
    """The run's database emptied of everything but the schema and the seeded size schemas."""
    with psycopg.connect(http_pg_database, autocommit=True) as conn:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
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
