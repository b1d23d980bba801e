"""Fixtures of the reconciliation tests: a migrated store on SQLite and on PostgreSQL.

Every test that takes ``store`` runs once per backend. The PostgreSQL database is
created and migrated once per session and shared: each test reconciles a cloud
of its own name (``Harness.cloud``), so rows, runs, size names and locks never
meet. A test that needs a database of its own takes ``pg_url`` instead.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import psycopg
import pytest

from tally.store import Store, open_store

PG_ADMIN_URL = os.environ.get("TALLY_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def shared_pg_url() -> Iterator[str]:
    """One migrated database for the session's PostgreSQL runs; dropped at the end."""
    try:
        psycopg.connect(PG_ADMIN_URL, connect_timeout=3).close()
    except psycopg.OperationalError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL does not answer at {PG_ADMIN_URL}: {exc}")
        pytest.skip(f"PostgreSQL does not answer at {PG_ADMIN_URL}")
    name = f"tally_reconcile_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = urlsplit(PG_ADMIN_URL)._replace(path=f"/{name}").geturl()

    async def migrate() -> None:
        async with open_store(url, max_conns=2) as opened:
            await opened.migrate_up()

    try:
        anyio.run(migrate)
        yield url
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'tally.sqlite3'}"
    return str(request.getfixturevalue("shared_pg_url"))


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[Store]:
    async with open_store(store_url, max_conns=4) as opened:
        if store_url.startswith("sqlite"):
            await opened.migrate_up()
        yield opened
