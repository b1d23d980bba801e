"""The PostgreSQL sync lock: one per cloud, a session advisory lock held across replicas.

The sync lock of a cloud is the session advisory lock (oid of ``sync_lock_keys``,
the cloud's key in it), held on a dedicated connection (never a pooled one) for
the run: it lives in the database, so it holds across replicas, and a holder that
dies takes it with its session. So does a server that restarts or fails over: the
holder's run goes on without the lock (its release logs "sync lock lost"). A
database that does not answer when a run asks for the lock is ``StoreUnavailable``,
never a held lock. The key is a number the table hands each cloud
name once, so two clouds never share a lock (a hash of the name could: hashtext
is 32 bits); the table's oid keeps apart the clouds of two Tally schemas in one
database, which share the advisory locks. A session lock rather than a row lock
held by a transaction, because a row lock needs a transaction id, which holds back
vacuum for the length of the run. The holder releases it with
``pg_advisory_unlock`` before closing the connection: a closed connection's locks
go only once its server process has exited, a moment later, and a sync started
in that moment would find the lock held.

A holder that hangs (a stopped process, a frozen host, a network that drops its packets without a
reset) keeps its session, and the kernel answers TCP keepalives for a stopped process, so neither the
session's end nor a keepalive frees the lock. The lock is therefore a lease: the session sets
``idle_session_timeout`` set to ``LEASE_S`` (PostgreSQL 14 and later; on 13 a hung holder keeps
the lock until it is ended by hand), and the holder renews it with a query every third
of it, from a thread of its own (``_pg_lease``), so that a run step holding the CPU does not let it
lapse. A holder that stops renewing loses the session, and the lock, within ``LEASE_S``, and another
replica's next run takes the cloud. A holder that wakes up after that learns it at its next renewal:
its run is cancelled and ends ``StoreUnavailable`` ("sync lock lost"), having overlapped the new
holder for at most one renewal interval (its corrections are level-based, so an overlap books
nothing twice in effect: docs/storage.md, "A hung holder").
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import psycopg

from ._interface import StoreError, StoreUnavailable, SyncLockHeld, SyncLockLost
from ._pg_lease import LeaseRenewal
from ._pool_wait import lost_connection, one_line

log = logging.getLogger(__name__)

#: How long the take of a lock may go on once it was asked for, whatever cancels its run meanwhile.
TAKE_BOUND_S = 10.0
#: How long a holder that stopped renewing keeps the lock: the server ends its idle session then.
LEASE_S = 60.0
#: PostgreSQL 14 brought idle_session_timeout; on 13 a hung holder keeps its lock (no lease).
IDLE_SESSION_TIMEOUT_SINCE = 140000


@asynccontextmanager
async def hold_sync_lock(url: str, cloud: str, *, lease_s: float = LEASE_S) -> AsyncIterator[None]:
    """Hold ``cloud``'s lock for the block on a connection of its own, opened from ``url``, renewed
    every third of ``lease_s``; raises ``SyncLockHeld`` at entry when another session holds it, and
    ``SyncLockLost`` (a ``StoreUnavailable``; the block cancelled) when the lock is lost while the block
    runs."""
    try:
        conn = await psycopg.AsyncConnection.connect(
            url,
            autocommit=True,
            application_name=f"tally sync lock {cloud}",
        )
    except psycopg.OperationalError as exc:
        raise StoreUnavailable(f"no connection for the sync lock of {cloud}: {one_line(exc)}") from exc
    try:
        key = await _take_bounded(conn, cloud, lease_s)
        lost: str | None = None
        try:
            with anyio.CancelScope() as block:
                renewal = LeaseRenewal(conn, lease_s / 3, block)
                renewal.start()
                try:
                    yield
                finally:
                    with anyio.CancelScope(shield=True):
                        await renewal.stop()
                    lost = renewal.lost
        finally:
            if lost is None:
                with anyio.CancelScope(shield=True):
                    await _release_sync_lock(conn, cloud, key)
        if lost is not None:
            log.warning("sync lock lost while its run went on cloud=%s: %s", cloud, lost)
            raise SyncLockLost(f"the sync lock of {cloud} was lost while the run went on: {lost}")
    finally:
        # Shielded: a cancelled holder would otherwise skip the close and leave the connection, and
        # with it a lock taken by a cancelled take, to the garbage collector.
        with anyio.CancelScope(shield=True):
            await conn.close()


async def _take_bounded(conn: psycopg.AsyncConnection[Any], cloud: str, lease_s: float) -> tuple[int, int]:
    try:
        # Shielded, within a bound: a take cancelled after it was sent may hold the lock on the
        # server while this side never learns its key to release it, and the close alone frees it
        # only once the server process exits, a moment in which another replica is refused.
        with anyio.CancelScope(shield=True, deadline=anyio.current_time() + TAKE_BOUND_S) as take:
            key = await _take_sync_lock(conn, cloud, lease_s)
        if take.cancelled_caught:
            raise StoreUnavailable(f"the sync lock of {cloud} was not taken within {TAKE_BOUND_S:g} s")
        return key
    except psycopg.OperationalError as exc:
        lost = lost_connection(exc, conn)
        if lost is None:
            raise
        raise lost from exc


# The two int4 keys of a cloud's lock: the oid of sync_lock_keys as the int4 of the same 32 bits (so
# pg_locks shows it as the classid) and the cloud's key. The two-key locks are a space apart from the
# one-key locks of the projection and the migrations.
_ADD_SYNC_LOCK_KEY = """
INSERT INTO sync_lock_keys (cloud) SELECT %s WHERE NOT EXISTS (SELECT 1 FROM sync_lock_keys WHERE cloud = %s)
ON CONFLICT (cloud) DO NOTHING
"""
_TRY_SYNC_LOCK = """
SELECT s.space, s.key, pg_try_advisory_lock(s.space, s.key)
FROM (SELECT tableoid::bigint::bit(32)::integer AS space, key FROM sync_lock_keys WHERE cloud = %s) AS s
"""


async def _take_sync_lock(conn: psycopg.AsyncConnection[Any], cloud: str, lease_s: float) -> tuple[int, int]:
    """Take ``cloud``'s lock on ``conn`` (giving the cloud its key first if it has none), the session
    ended by the server once idle for ``lease_s`` (PostgreSQL 14 and later); its two keys."""
    if conn.info.server_version >= IDLE_SESSION_TIMEOUT_SINCE:
        # A statement of its own, set before the take: the server arms the idle timer only after a
        # statement sent outside a pipeline, and the connection string may carry options of its own.
        await conn.execute("SELECT set_config('idle_session_timeout', %s, false)", [f"{lease_s * 1000:.0f}"])
    # The read takes its snapshot after the insert has returned, and the insert waits for a concurrent
    # adder of the same cloud to commit, so the read sees the key row whoever added it. NOT EXISTS first,
    # because ON CONFLICT alone would spend a number of the identity on every run. Two round trips, not
    # one pipeline: the server arms the session's idle timer (the lease) only after a statement sent
    # outside a pipeline, and a holder that hangs right after its take sends no other.
    await conn.execute(_ADD_SYNC_LOCK_KEY, [cloud, cloud])
    cursor = await conn.execute(_TRY_SYNC_LOCK, [cloud])
    row = await cursor.fetchone()
    if row is None:
        raise StoreError(f"cloud {cloud!r} has no row in sync_lock_keys: was the table edited by hand?")
    if not row[2]:
        raise SyncLockHeld(cloud)
    return int(row[0]), int(row[1])


async def _release_sync_lock(conn: psycopg.AsyncConnection[Any], cloud: str, key: tuple[int, int]) -> None:
    """Release the lock at once; the connection is idle here, since the holder's work never uses it."""
    try:
        await conn.execute("SELECT pg_advisory_unlock(%s, %s)", list(key))
    except psycopg.Error as exc:
        # The session is gone (the server restarted, or ended it), and its lock with it: another run may
        # have taken the cloud before this one finished.
        log.warning("sync lock lost with its connection before the run ended cloud=%s: %s", cloud, exc)
