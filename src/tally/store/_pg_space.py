"""A PostgreSQL that cannot write for want of space: named, remembered, and probed until it can again.

A full disk under PostgreSQL refuses the statement that needed a new block ("could not extend file
...: No space left on device", SQLSTATE 53100 ``disk_full``; 53200 ``out_of_memory`` likewise says
the server has no room now). That is an outage, not a bug: the write is raised as ``StoreNoSpace``, a
``StoreUnavailable``, so the Reporting API answers 503 (a client retries), the collector's rows stay in
its outbox and a sync run is not recorded as done. Nothing of the refused transaction is committed.

The readiness check's own write (``write_check``) changes no row, so it would not meet the full disk;
and the writes that do meet it may be another process's (the daemon's HTTP workers ingest, its main
process answers ``/readyz``), whose refusals this process never sees. So each check also runs
``probe``: a table created and a row inserted in a transaction that is rolled back, which needs a new
block in the tablespace where ``default_tablespace`` puts Tally's tables, as the migrations did. A
refusal there (or of any write) is the fault, said once in the log; the first probe that goes
through after it ends the fault, said once too. A role that may not create the probe's table cannot
tell: the probe is then left off for good (said once), and only refused writes of this process name
the fault, the next probe-less check ending it.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from prometheus_client import Counter

from ._interface import StoreUnavailable
from ._pool_wait import one_line

log = logging.getLogger(__name__)

NO_SPACE_REFUSALS = Counter(
    "tally_db_no_space_refusals_total",
    "Statements PostgreSQL refused for want of space (SQLSTATE 53100 disk_full, 53200 out_of_memory).",
    ["sqlstate"],
)

_WORDS = {"53100": "disk full", "53200": "out of memory"}


class StoreNoSpace(StoreUnavailable):
    """PostgreSQL refused a write for want of space; nothing of the transaction was committed."""


def _refusal(exc: psycopg.Error) -> StoreNoSpace:
    sqlstate = exc.sqlstate or "53100"
    words = _WORDS.get(sqlstate, "no space")
    return StoreNoSpace(f"the database cannot write: {words} (SQLSTATE {sqlstate}): {one_line(exc)}")


class SpaceFaults:
    """The last refusal for want of space. Invariant: ``problem`` is None iff no refusal since the
    last probe that went through."""

    def __init__(self) -> None:
        self.problem: StoreNoSpace | None = None
        self._since: float | None = None
        self._may_create = True

    def _record(self, exc: psycopg.Error) -> StoreNoSpace:
        refusal = _refusal(exc)
        if self.problem is None:
            self._since = time.monotonic()
            log.warning("store: PostgreSQL refuses writes for want of space; writes wait detail=%s", refusal)
        self.problem = refusal
        return refusal

    @asynccontextmanager
    async def watching(self) -> AsyncIterator[None]:
        """The block's statements: a refusal for want of space is recorded and raised as ``StoreNoSpace``."""
        try:
            yield
        except (psycopg.errors.DiskFull, psycopg.errors.OutOfMemory) as exc:
            NO_SPACE_REFUSALS.labels(exc.sqlstate or "").inc()
            raise self._record(exc) from exc

    async def probe(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Raise the refusal unless a write that needs a new block goes through now."""
        if self._may_create:
            table = f"tally_space_probe_{uuid.uuid4().hex[:12]}"
            try:
                async with conn.transaction(force_rollback=True):
                    await conn.execute(f"CREATE TABLE {table} (filler text)")
                    await conn.execute(f"INSERT INTO {table} VALUES (repeat('x', 100))")
            except (psycopg.errors.DiskFull, psycopg.errors.OutOfMemory) as exc:
                raise self._record(exc) from exc
            except psycopg.errors.InsufficientPrivilege as exc:
                self._may_create = False
                log.info(
                    "store: the space probe may not create its table, refused writes tell: %s", one_line(exc)
                )
        if self.problem is None:
            return
        lasted = time.monotonic() - (self._since or time.monotonic())
        log.warning("store: PostgreSQL takes writes again after %.1f s without space", lasted)
        self.problem = None
        self._since = None
