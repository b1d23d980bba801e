"""A PostgreSQL that refuses writes: its pooled sessions are replaced, so that they heal when it does.

A session takes ``default_transaction_read_only`` (``ALTER DATABASE ... SET``, a role's setting, a hot
standby after a failover) when it connects and keeps it for its life. Once the database takes writes
again, a session opened meanwhile would refuse every write until it is closed, and the pool keeps its
sessions up to their ``max_lifetime``. So a write refused as read-only (SQLSTATE 25006) drains the pool:
idle sessions are closed and opened anew (``target_session_attrs=read-write`` in the URL then leads a
new one to the primary), busy ones are closed when given back. At most once every ``DRAIN_EVERY_S``, so
that a database that stays read-only is not met with a storm of reconnections; each later refusal
drains again after that. The refusal is raised as ``StoreUnavailable``: an outage the callers already
wait out (the collector's rows stay in its outbox, the API answers 503, a sync is not started).

Apart from that, no session lives longer than ``MAX_LIFETIME_S``: whatever a session carries that the
server's settings changed since (a role's parameters, a failover the session did not notice) ends then.

A URL naming several hosts (``postgresql://db-a:5432,db-b:5432/tally``) without
``target_session_attrs`` gets ``target_session_attrs=read-write`` (``writable_target``): libpq's
default, ``any``, would keep a new session on the first host that answers, a demoted primary or a
standby included, and every write would be refused. A URL that names the attribute keeps its own.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from prometheus_client import Counter
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import AsyncConnectionPool

from ._interface import StoreUnavailable
from ._pool_wait import one_line

log = logging.getLogger(__name__)

MAX_LIFETIME_S = 600.0
DRAIN_EVERY_S = 2.0

READ_ONLY_REFUSALS = Counter(
    "tally_db_read_only_refusals_total",
    "Statements PostgreSQL refused because the session is read-only (SQLSTATE 25006); each drains the "
    "pool's sessions (at most every 2 s) so that they reconnect to a writable server.",
)


def writable_target(url: str) -> str:
    """``url``, with ``target_session_attrs=read-write`` when it names several hosts and no such attribute."""
    info = conninfo_to_dict(url)
    hosts = str(info.get("host") or info.get("hostaddr") or "")
    if "," not in hosts or "target_session_attrs" in info:
        return url
    return make_conninfo(url, target_session_attrs="read-write")


class StoreReadOnly(StoreUnavailable):
    """The database refused a write as read-only; the pool's sessions are being replaced."""


class ReadOnlyHealer:
    """Drains ``pool`` after a read-only refusal; see the module docstring."""

    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self._pool = pool
        self._drained_at: float | None = None
        self._refusing = False

    @asynccontextmanager
    async def watching(self, conn: Any) -> AsyncIterator[Any]:
        """The block's statements on ``conn``: a read-only refusal replaces the sessions and is raised
        as ``StoreReadOnly``; a write that went through says the database takes writes again."""
        try:
            yield conn
        except psycopg.errors.ReadOnlySqlTransaction as exc:
            READ_ONLY_REFUSALS.inc()
            await self._refused(exc)
            raise StoreReadOnly(f"the database refuses writes (read-only): {one_line(exc)}") from exc

    async def _refused(self, exc: BaseException) -> None:
        if not self._refusing:
            self._refusing = True
            log.warning(
                "store: PostgreSQL refuses writes (read-only); its sessions are replaced, writes wait "
                "detail=%s",
                one_line(exc),
            )
        now = time.monotonic()
        if self._drained_at is not None and now - self._drained_at < DRAIN_EVERY_S:
            return
        self._drained_at = now
        if not self._pool.closed:
            await self._pool.drain()

    def wrote(self) -> None:
        """A write transaction committed: the database takes writes (said once after a refusal)."""
        if self._refusing:
            self._refusing = False
            log.warning("store: PostgreSQL takes writes again")
