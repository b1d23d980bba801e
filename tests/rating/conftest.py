"""Fixtures of the rating tests: a store URL of each backend, and the rating helpers' module path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def any_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty store of each backend (PostgreSQL: a schema of its own, dropped after)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.sqlite3'}"
        return
    yield request.getfixturevalue("pg_schema_url")
