"""Fixtures of the ingest tests: a migrated store on SQLite and on PostgreSQL, and wire-event builders.

PostgreSQL: one schema per test in the run's database (``pg_schema_url`` of tests/conftest.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tally.store import Store, open_store


@pytest.fixture(params=["sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A migrated store of each backend."""
    if request.param == "sqlite":
        async with open_store(f"sqlite:///{tmp_path / 'store.sqlite3'}") as opened:
            await opened.migrate_up()
            yield opened
        return
    async with open_store(request.getfixturevalue("pg_schema_url")) as opened:
        await opened.migrate_up()
        yield opened


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
