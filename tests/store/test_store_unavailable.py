"""The PostgreSQL store while its server goes away: a lost session, a server that is down, and back.

Each is ``StoreUnavailable``, never a bare psycopg error: the Reporting API answers it 503 and a sync
run ends with it instead of crashing its scheduler. A session ended under the pool fails the one call
that held it, and the next call gets a new connection; a server that is down makes a wait end with a
reason that names the database, not a busy pool; once it is back the pool connects again by itself.
"""

from __future__ import annotations

import time
from contextlib import AsyncExitStack

import psycopg
import pytest

from tally.store import ConnectionWaitTimeout, StoreUnavailable, SyncLockHeld, connection_deadline, open_store
from tally.testing.pg_node import PgNode

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


async def test_a_session_ended_under_the_pool_fails_one_call_and_the_next_reconnects(
    pg_schema_url: str,
) -> None:
    async with open_store(pg_schema_url, max_conns=1) as store:
        await store.migrate_up()
        async with store.seam._connection() as conn:  # type: ignore[attr-defined]
            pid = (await (await conn.execute("SELECT pg_backend_pid()")).fetchone())[0]
        with psycopg.connect(pg_schema_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", [pid])
        with pytest.raises(
            StoreUnavailable, match="the database connection was lost: terminating connection"
        ):
            await store.schema_status()
        assert not (await store.schema_status()).behind


async def test_the_servers_word_that_it_ended_the_session_is_a_lost_connection_before_libpq_sees_it_close(
    pg_schema_url: str,
) -> None:
    """A pipeline can read a restart's FATAL (57P01) as a statement's result and then fail to leave
    pipeline mode on a connection not yet closed: the error raised is that second one, raised while the
    first was handled. It is the database going away all the same, not a fault with a traceback."""
    async with open_store(pg_schema_url, max_conns=1) as store:
        await store.migrate_up()
        with pytest.raises(
            StoreUnavailable, match="the database connection was lost: terminating connection due to admin"
        ):
            async with store.seam._connection() as conn:  # type: ignore[attr-defined]
                assert not conn.closed
                try:  # as psycopg's pipeline leaves: the second error raised in a ``finally``
                    raise psycopg.errors.AdminShutdown("terminating connection due to administrator command")
                finally:
                    raise psycopg.OperationalError("cannot exit pipeline mode with uncollected results")
        # A statement the server cancelled leaves the session alive: that error is the caller's own.
        with pytest.raises(psycopg.errors.QueryCanceled):
            async with store.seam._connection() as conn:  # type: ignore[attr-defined]
                await conn.execute("SET statement_timeout = '10ms'")
                await conn.execute("SELECT pg_sleep(1)")
        assert not (await store.schema_status()).behind


async def test_after_a_lost_session_the_next_call_draws_no_other_dead_one(pg_schema_url: str) -> None:
    """A restart kills every pooled session at once: the first call to find one dead fails, and has the
    pool check the others, so the next call gets a live connection rather than the next dead one."""
    async with open_store(pg_schema_url, max_conns=3) as store:
        await store.migrate_up()
        pids = []
        async with AsyncExitStack() as stack:
            for _ in range(3):
                conn = await stack.enter_async_context(store.seam._connection())  # type: ignore[attr-defined]
                pids.append((await (await conn.execute("SELECT pg_backend_pid()")).fetchone())[0])
        with psycopg.connect(pg_schema_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", [pids])
        with pytest.raises(StoreUnavailable):
            await store.schema_status()
        assert not (await store.schema_status()).behind


async def test_a_server_that_is_down_is_named_and_the_pool_connects_again_once_it_is_back(
    pg_node: PgNode,
) -> None:
    node = pg_node
    async with open_store(node.url(), max_conns=2) as store:
        await store.migrate_up()
        node.stop()
        with pytest.raises(StoreUnavailable):  # the idle connection's session is gone
            await store.schema_status()
        with connection_deadline(time.monotonic() + 1.5), pytest.raises(ConnectionWaitTimeout) as waited:
            await store.schema_status()
        assert "the database does not answer" in str(waited.value)
        with pytest.raises(StoreUnavailable, match="no connection for the sync lock of os-a"):
            async with store.sync_lock("os-a"):
                pass
        node.start()
        began = time.monotonic()
        with connection_deadline(time.monotonic() + 20):
            assert not (await store.schema_status()).behind
        assert time.monotonic() - began < 20
        async with store.sync_lock("os-a"):
            with pytest.raises(SyncLockHeld):
                async with store.sync_lock("os-a"):
                    pass
