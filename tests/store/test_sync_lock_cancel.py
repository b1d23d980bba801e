"""The sync lock under cancellation: a run cancelled at any point leaves the store usable and the lock free.

A bench run once crashed the second sync on SQLite with "cannot start a
transaction within a transaction": the lease renewal was cancelled while its
BEGIN IMMEDIATE waited for the file, and the transaction it opened was never
rolled back. These tests cancel the holder and the renewal at awkward points,
then take the lock again and do other store work on the same store.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import anyio
import psycopg
import pytest

from tally.store import Store, SyncLockHeld, open_store
from tally.store._sql import SqlStore
from tally.store._sqlite import SqliteStore

pytestmark = pytest.mark.anyio

T = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
async def leased(tmp_path: Path) -> AsyncIterator[SqlStore]:
    """A SQLite store whose lease is renewed every 0.2 s, so renewals happen inside short tests."""
    store = SqliteStore(str(tmp_path / "lease.sqlite3"), lease_s=0.6)
    await store.open()
    try:
        await store.migrate_up()
        yield store
    finally:
        await store.aclose()


async def still_works(store: Store, cloud: str = "os-dev") -> None:
    """The lock can be taken again and ordinary store work succeeds while holding it and after."""
    async with store.sync_lock(cloud):
        run = await store.start_sync_run(cloud, T)
        await store.finish_sync_run(run, "completed", {"created": 0})
    assert await store.last_completed_sync_started_at(cloud) == T


async def test_renewal_cancelled_while_waiting_for_the_file(leased: SqlStore, tmp_path: Path) -> None:
    # Another process holds the write lock of the file, so the renewal's BEGIN IMMEDIATE waits in
    # SQLite's busy handler when the run is cancelled.
    blocker = sqlite3.connect(tmp_path / "lease.sqlite3", isolation_level=None)
    try:

        async def unblock_later() -> None:
            await anyio.sleep(0.8)
            blocker.execute("COMMIT")

        async with anyio.create_task_group() as tg:
            with anyio.CancelScope() as scope:
                async with leased.sync_lock("os-dev"):
                    blocker.execute("BEGIN IMMEDIATE")
                    tg.start_soon(unblock_later)
                    await anyio.sleep(0.4)  # the renewal (every 0.2 s) is now waiting on the file
                    scope.cancel()
                    await anyio.sleep(1)
        assert scope.cancelled_caught
        assert not leased.seam.conn.in_transaction
        await still_works(leased)
    finally:
        blocker.close()


async def test_holder_cancelled_at_random_points(leased: SqlStore) -> None:
    rng = random.Random(7)
    for _ in range(40):
        with anyio.move_on_after(rng.uniform(0, 0.05)):
            async with leased.sync_lock("os-dev"):
                await leased.start_sync_run("os-dev", T)
                await anyio.sleep(rng.uniform(0, 0.3))
        assert not leased.seam.conn.in_transaction
    await still_works(leased)


async def test_cancelled_holder_frees_the_lock(store_url: str) -> None:
    async with open_store(store_url) as one, open_store(store_url) as two:
        await one.migrate_up()
        for delay in (0.0, 0.001, 0.005, 0.02, 0.1):
            with anyio.move_on_after(delay):
                async with one.sync_lock("os-dev"):
                    await anyio.sleep(1)
            # Another holder (another replica) gets the lock at once: nothing of the first one lingers.
            await still_works(two)
            await still_works(one)


async def test_postgres_lock_released_when_the_holder_is_cancelled(store_url: str) -> None:
    if not store_url.startswith("postgresql"):
        pytest.skip("the advisory lock is PostgreSQL's")
    async with open_store(store_url) as store:
        await store.migrate_up()
        with anyio.CancelScope() as scope:
            async with store.sync_lock("os-dev"):
                scope.cancel()
                await anyio.sleep(1)
        # The holder's dedicated connection is closed, not left to the garbage collector.
        async with await psycopg.AsyncConnection.connect(store_url.split("?")[0], autocommit=True) as admin:
            cursor = await admin.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            )
            row = await cursor.fetchone()
        assert row is not None and row[0] == 0
        with pytest.raises(SyncLockHeld):
            async with store.sync_lock("os-dev"), store.sync_lock("os-dev"):
                pass


async def test_a_take_the_database_holds_up_is_bounded_and_never_a_lock(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The take goes on when its run is cancelled (so a lock it took is released), but not forever: a
    # database that holds it up past the bound is StoreUnavailable, and the run holds no lock.
    if not store_url.startswith("postgresql"):
        pytest.skip("the advisory lock is PostgreSQL's")
    from tally.store import StoreUnavailable, _pg_sync_lock

    monkeypatch.setattr(_pg_sync_lock, "TAKE_BOUND_S", 0.5)
    async with open_store(store_url) as store:
        await store.migrate_up()
        # The test's schema is in the URL's options: the blocker locks the store's own table.
        async with await psycopg.AsyncConnection.connect(store_url) as blocker:
            await blocker.execute("LOCK TABLE sync_lock_keys IN ACCESS EXCLUSIVE MODE")
            with anyio.fail_after(5), pytest.raises(StoreUnavailable, match=r"not taken within 0\.5 s"):
                async with store.sync_lock("os-bound"):
                    pytest.fail("a lock was held")
            await blocker.rollback()
        await still_works(store, "os-bound")
