"""Who gets a cloud's sync lock: the next run at once after a release, each cloud its own, never two holders.

The PostgreSQL lock used to be released by closing its connection; the server
drops a closed session's locks only once its process has exited, so a run
taken right after the release could be refused (8 of 300 under load). And its
key was a 32-bit hash of the cloud's name, so two clouds could share a lock.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import anyio
import psycopg
import pytest

from tally.core import Event
from tally.store import Store, SyncLockHeld, open_store

pytestmark = pytest.mark.anyio

# Found by grouping hashtext('cloud-' || i) over i up to 300,000: the two clouds the old key confused.
COLLIDING = ("cloud-14345", "cloud-21504")

# The operator's query of docs/storage.md: which session holds which cloud's lock.
HOLDERS = """
SELECT k.cloud, l.pid FROM pg_locks AS l
JOIN sync_lock_keys AS k ON l.classid = 'sync_lock_keys'::regclass::oid AND l.objid = k.key::oid
WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
"""


@asynccontextmanager
async def under_load(url: str, make_event: Callable[..., Event]) -> AsyncIterator[None]:
    """Other work on the server for the block: a second store ingesting batches and, on PostgreSQL,
    sessions that connect, run a query of a few milliseconds and disconnect, over and over."""
    async with open_store(url) as other, anyio.create_task_group() as tg:

        async def ingest() -> None:
            at = datetime(2026, 3, 1, tzinfo=UTC)
            for i in range(1_000_000):
                stamp = (at + timedelta(seconds=i)).isoformat()
                await other.write_batch(
                    [make_event(at=stamp, resource_id=f"vm-{i % 50}", cloud="os-load") for _ in range(20)]
                )

        async def churn() -> None:
            while True:
                async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
                    await conn.execute("SELECT count(*) FROM generate_series(1, 100000)")

        tg.start_soon(ingest)
        if url.startswith("postgresql"):
            for _ in range(3):
                tg.start_soon(churn)
        await anyio.sleep(0.3)
        yield
        tg.cancel_scope.cancel()


async def test_back_to_back_takes_under_load_are_never_refused(
    store: Store, store_url: str, make_event
) -> None:
    refused = 0
    async with under_load(store_url, make_event):
        for _ in range(300):
            try:
                async with store.sync_lock("os-dev"):
                    pass
            except SyncLockHeld:
                refused += 1
    assert refused == 0


async def test_the_colliding_pair_shared_the_old_key(pg_schema_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(pg_schema_url) as conn:
        cursor = await conn.execute("SELECT hashtext(%s) = hashtext(%s)", list(COLLIDING))
        assert await cursor.fetchone() == (True,)


async def test_clouds_whose_old_keys_collided_are_held_at_once(store_url: str) -> None:
    first, second = COLLIDING
    async with open_store(store_url) as one, open_store(store_url) as two:
        await one.migrate_up()
        async with one.sync_lock(first), two.sync_lock(second):
            with pytest.raises(SyncLockHeld, match=first):
                async with two.sync_lock(first):
                    pass
            with pytest.raises(SyncLockHeld, match=second):
                async with one.sync_lock(second):
                    pass
        async with two.sync_lock(first), one.sync_lock(second):
            pass


async def test_a_holder_whose_connection_dies_frees_the_lock(
    pg_schema_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with (
        open_store(pg_schema_url) as holder,
        open_store(pg_schema_url) as other,
        await psycopg.AsyncConnection.connect(pg_schema_url, autocommit=True) as admin,
    ):
        await holder.migrate_up()
        with caplog.at_level(logging.WARNING, logger="tally.store"):
            async with holder.sync_lock("os-dev"):
                rows = await (await admin.execute(HOLDERS)).fetchall()
                assert [cloud for cloud, _ in rows] == ["os-dev"]
                # Waits (up to 5 s) until the backend has exited, as a crashed holder's would.
                await admin.execute("SELECT pg_terminate_backend(%s, 5000)", [rows[0][1]])
                async with other.sync_lock("os-dev"):
                    assert [cloud for cloud, _ in await (await admin.execute(HOLDERS)).fetchall()] == [
                        "os-dev"
                    ]
        assert "sync lock lost with its connection before the run ended cloud=os-dev" in caplog.text
        assert await (await admin.execute(HOLDERS)).fetchall() == []
        async with holder.sync_lock("os-dev"):
            pass


async def test_the_same_cloud_in_two_schemas_has_two_locks(
    pg_schema_url: str, pg_session_schema: Callable[[str], str]
) -> None:
    async with open_store(pg_schema_url) as one, open_store(pg_session_schema("lock")) as two:
        await one.migrate_up()
        await two.migrate_up()
        async with one.sync_lock("os-dev"), two.sync_lock("os-dev"):
            with pytest.raises(SyncLockHeld):
                async with two.sync_lock("os-dev"):
                    pass


async def test_runs_racing_for_a_new_cloud_get_one_holder(store: Store) -> None:
    # Each take on PostgreSQL is a connection of its own; the first ones also race to add the key row.
    got: list[int] = []
    refused: list[int] = []

    async def take(i: int) -> None:
        try:
            async with store.sync_lock("os-new"):
                got.append(i)
                await anyio.sleep(0.5)
        except SyncLockHeld:
            refused.append(i)

    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(take, i)
    assert len(got) == 1 and len(refused) == 7
    async with store.sync_lock("os-new"):
        pass
