"""Waiting for a pooled PostgreSQL connection: bounded by the caller's deadline, measured, and named.

A sync run must not wait for a database connection past its budget (issue 17): with many clouds
syncing at once the pool of ``TALLY_REPORTING_DB_MAX_CONNS`` is what they queue for. psycopg_pool
waits up to its own timeout (30 s) for every request; a caller that sets a deadline with
``connection_deadline`` makes each acquisition in its context wait only until then, and a wait
that reaches it raises ``ConnectionWaitTimeout`` naming the wait, at the acquisition (never in the
middle of a statement). The context is a ``ContextVar``, so the tasks a run starts inherit it and
the store's methods need no extra argument.

Every acquisition is counted in ``tally_db_connection_wait_seconds`` (no labels) and each timeout in
``tally_db_connection_wait_timeouts_total``: the pool's queue is visible whoever waited.

A wait also ends without a connection when the database does not answer (the pool's attempts to
connect fail, as while PostgreSQL restarts or fails over); the timeout's text then says so rather than
blaming a busy pool. ``ConnectionWaitTimeout`` is a ``StoreUnavailable``, and so is a connection lost
in the middle of the block (the server ended the session: a restart, a failover, an administrator):
callers tell "the database is away, try later" from a fault by that one class. A lost session has
the pool check its idle connections at once: after a restart every one of them is dead, and each would
otherwise fail the next call that drew it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import psycopg
from prometheus_client import Counter, Histogram
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from ._interface import StoreUnavailable

log = logging.getLogger(__name__)

CONNECTION_WAIT = Histogram(
    "tally_db_connection_wait_seconds",
    "Time a request waited for a connection of the PostgreSQL pool (TALLY_REPORTING_DB_MAX_CONNS).",
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
CONNECTION_WAIT_TIMEOUTS = Counter(
    "tally_db_connection_wait_timeouts",
    "Requests that got no pooled connection before their deadline (a sync's budget) or the pool's timeout.",
)


class ConnectionWaitTimeout(StoreUnavailable):
    """No pooled connection came free before the caller's deadline; the text names the wait."""


def one_line(message: object) -> str:
    """An error's text on one line (libpq's messages take several)."""
    return " ".join(part.strip() for part in str(message).strip().splitlines() if part.strip())


def lost_connection(exc: BaseException, conn: Any) -> StoreUnavailable | None:
    """A ``StoreUnavailable`` for ``exc`` when the session is gone (``conn`` closed, or the server said it
    ended the session), else None."""
    if not isinstance(exc, psycopg.OperationalError):
        return None
    ended = _ended_by_server(exc)
    if ended is None and not getattr(conn, "closed", False):
        return None
    return StoreUnavailable(f"the database connection was lost: {one_line(ended or exc)}")


def _ended_by_server(exc: BaseException) -> psycopg.Error | None:
    """The server's own word that it ended the session, in ``exc`` or the errors it was raised from:
    SQLSTATE class 08 (connection exception) or 57P (shutting down, a terminated backend). A pipeline
    can read that FATAL as a statement's result, then fail to leave pipeline mode on a connection it has
    not yet seen close: the error raised is then the second one, its connection not yet ``closed``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        state = getattr(current, "sqlstate", None) or ""
        if isinstance(current, psycopg.Error) and state.startswith(("08", "57P")):
            return current
        current = current.__cause__ or current.__context__
    return None


@dataclass(slots=True)
class ConnectionWaits:
    """The waits of one caller (a sync run) so far. Invariant: ``waiting`` only inside an acquisition."""

    deadline: float | None  # time.monotonic() instant; None = the pool's own timeout
    waiting: bool = False
    count: int = 0
    total_s: float = 0.0
    longest_s: float = 0.0


_CURRENT: ContextVar[ConnectionWaits | None] = ContextVar("tally_connection_waits", default=None)


@contextmanager
def connection_deadline(deadline: float | None) -> Iterator[ConnectionWaits]:
    """Bound every pooled acquisition in this context (and the tasks it starts) by ``deadline``."""
    waits = ConnectionWaits(deadline)
    token = _CURRENT.set(waits)
    try:
        yield waits
    finally:
        _CURRENT.reset(token)


@asynccontextmanager
async def pooled_connection(
    pool: AsyncConnectionPool[Any], max_conns: int, connect_failing: Callable[[], bool] = lambda: False
) -> AsyncIterator[Any]:
    """A connection of ``pool`` for the block, waiting no longer than the context's deadline.
    ``connect_failing`` tells whether the pool's attempts to connect fail (no success since)."""
    waits = _CURRENT.get()
    timeout = None
    if waits is not None and waits.deadline is not None:
        timeout = max(0.0, waits.deadline - time.monotonic())
    began = time.monotonic()
    if waits is not None:
        waits.waiting = True
    async with AsyncExitStack() as stack:
        try:
            conn = await stack.enter_async_context(pool.connection(timeout=timeout))
        except PoolTimeout as exc:
            CONNECTION_WAIT_TIMEOUTS.inc()
            if connect_failing():
                why = "the database does not answer (the pool's connection attempts fail)"
            else:
                why = f"all {max_conns} of TALLY_REPORTING_DB_MAX_CONNS in use"
            raise ConnectionWaitTimeout(
                f"waited {time.monotonic() - began:.1f} s for a database connection, {why}"
            ) from exc
        finally:
            waited = time.monotonic() - began
            CONNECTION_WAIT.observe(waited)
            if waits is not None:
                waits.waiting = False
                waits.count += 1
                waits.total_s += waited
                waits.longest_s = max(waits.longest_s, waited)
        try:
            yield conn
        except psycopg.OperationalError as exc:
            lost = lost_connection(exc, conn)
            if lost is None:
                raise
            await _check_the_others(pool)
            raise lost from exc


async def _check_the_others(pool: AsyncConnectionPool[Any]) -> None:
    """One session lost is likely all of them (the server restarted): have the pool try each idle
    connection now and replace the dead ones, so the calls after this one do not each draw one of them
    (a sync run caught by a restart then failed to record its end on the next). ``check`` takes them
    all out first, so none is handed out meanwhile; a dead one fails at once."""
    try:
        await pool.check()
    except Exception as exc:  # a closed pool, a check that failed: the lost session is the error to tell
        log.info("pool check after a lost connection failed: %s", exc)
