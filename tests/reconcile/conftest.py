"""Fixtures of the reconciliation tests: a migrated store on SQLite and on PostgreSQL.

Every test that takes ``store`` runs once per backend. The PostgreSQL schema is
created and migrated once per session and shared: each test reconciles a cloud
of its own name (``Harness.cloud``), so rows, runs, size names and locks never
meet. A test that needs a database of its own takes ``pg_url`` instead.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import pytest

from tally.store import Store, open_store


@pytest.fixture(scope="session")
def shared_pg_url(pg_session_schema: Callable[[str], str]) -> str:
    """One migrated schema for the session's PostgreSQL runs, in the run's database."""
    url = pg_session_schema("reconcile")

    async def migrate() -> None:
        async with open_store(url, max_conns=2) as opened:
            await opened.migrate_up()

    anyio.run(migrate)
    return url


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
