"""A sync while the database is away (a restart, a failover): the run ends with the reason, it never
raises. Raising took the scheduler actor down; five of those within a minute (a PostgreSQL restart
of a few seconds, two clouds) made the supervisor give up and the daemon exit 1
(tests/daemon/test_store_restart.py found it)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from test_sync_cap import AT, Gated, service, unique

from tally.reconcile import Status
from tally.store import Store, StoreUnavailable

pytestmark = pytest.mark.anyio


class Away:
    """The store, except that the methods named in ``failing`` raise ``StoreUnavailable``, as the
    PostgreSQL store does while its server restarts."""

    def __init__(self, store: Store, *failing: str) -> None:
        self._store = store
        self._failing = set(failing)

    def __getattr__(self, name: str) -> Any:
        if name in self._failing:
            if name == "sync_lock":
                return self._no_lock
            return self._raise
        return getattr(self._store, name)

    async def _raise(self, *args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailable("the database connection was lost: terminating connection")

    @asynccontextmanager
    async def _no_lock(self, cloud: str) -> AsyncIterator[None]:
        raise StoreUnavailable(f"no connection for the sync lock of {cloud}: connection refused")
        yield


async def test_no_connection_for_the_lock_is_a_run_not_started(store: Store) -> None:
    cloud = unique("away-lock")
    sync = service(Away(store, "sync_lock"), [cloud], Gated(0.0), cap=1, budget_s=5)  # type: ignore[arg-type]
    outcome = await sync.run_cloud(cloud, AT)
    assert outcome.status is Status.NOT_STARTED
    assert outcome.stats["errors"] == ["the database does not answer"]
    assert await store.list_sync_runs(cloud) == []
    health = (await sync.readiness_check()).clouds[cloud]
    assert health["failing"] and health["last_error"] == "the database does not answer"


async def test_a_row_that_cannot_be_inserted_is_a_run_not_started(store: Store) -> None:
    if store.dialect == "sqlite":
        pytest.skip(
            "only PostgreSQL raises StoreUnavailable; SQLite's lease lock groups what its block raises"
        )
    cloud = unique("away-row")
    sync = service(Away(store, "start_sync_run"), [cloud], Gated(0.0), cap=1, budget_s=5)  # type: ignore[arg-type]
    outcome = await sync.run_cloud(cloud, AT)
    assert outcome.status is Status.NOT_STARTED
    assert await store.list_sync_runs(cloud) == []


async def test_an_end_that_cannot_be_recorded_fails_the_run_and_leaves_the_row_to_the_next_holder(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    cloud = unique("away-end")
    sync = service(Away(store, "finish_sync_run"), [cloud], Gated(0.0), cap=1, budget_s=5)  # type: ignore[arg-type]
    outcome = await sync.run_cloud(cloud, AT)
    assert outcome.status is Status.FAILED and outcome.sync_run_id is not None
    assert outcome.stats["errors"][-1].startswith(f"the end of the run of {cloud} could not be recorded")
    assert any("sync end not recorded" in r.getMessage() for r in caplog.records)
    [row] = await store.list_sync_runs(cloud)
    assert row["status"] == "running"
    # The next run takes the lock and fails the row as one whose holder stopped.
    again = await service(store, [cloud], Gated(0.0), cap=1, budget_s=5).run_cloud(cloud, AT)
    assert again.status is Status.COMPLETED
    runs = {r["id"]: r for r in await store.list_sync_runs(cloud)}
    assert runs[outcome.sync_run_id]["status"] == "failed"
