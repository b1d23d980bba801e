"""Fixtures of the store contract suite: every test runs on SQLite and on the machine's PostgreSQL.

PostgreSQL: each test gets its own schema of the run's database (``pg_schema_url`` of
tests/conftest.py), so tests never see each other's rows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tally.core import Event, parse_event
from tally.store import Store, open_store


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty store of each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.sqlite3'}"
        return
    yield request.getfixturevalue("pg_schema_url")


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
