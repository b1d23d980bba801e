"""The SQLite backend (aiosqlite, WAL): the embedded default, a file in the state directory.

``SqliteDialect`` is the seam's SQLite side (``_sql_dialect``); ``SqliteStore`` assembles the roles
over it (``_sql``), with the ingest path's steps run one statement at a time (``_sql_steps``).

One connection serves the process; an anyio lock lets one transaction use it at
a time, and write transactions start with BEGIN IMMEDIATE so that a second
process on the same file waits for the writer instead of failing mid-batch.
BEGIN, COMMIT and ROLLBACK are awaited to their end whatever cancels the caller
(``_to_the_end``): a caller that stopped waiting would release the connection
before aiosqlite's thread ran the statement, and the next transaction would find
one open ("cannot start a transaction within a transaction", D9).
A write the file's disk refuses (SQLITE_FULL, a read-only or failing filesystem) is rolled back and
raised as ``StoreUnavailable`` naming the file: an outage the callers wait out (the Reporting API
answers 503, the collector keeps its rows), said once in the log when it starts and once when a write
commits again. A file deleted or replaced under the process refuses every write the same way (it
would land in a file that vanishes at exit); nothing mends that but a restart.
Instants are stored as fixed-width UTC text (text order is time order), JSON as
canonical text. The sync lock is a row in ``sync_locks`` with a lease that the
holder renews while it runs, so a holder that crashed stops blocking once its
lease runs out.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import uuid
from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
import anyio

from tally.config import prepare_state_file
from tally.core import as_utc, parse_instant, utc_now

from ._interface import Bucket, MigrationError, StoreUnavailable, SyncLockHeld
from ._migrations import Migration
from ._seam import Tx, WriteSteps
from ._sql import SqlStore
from ._sql_dialect import SqlDialect
from ._sql_steps import SqlSteps
from ._sql_text import canonical_json, loads_json

log = logging.getLogger(__name__)
_T = TypeVar("_T")


_STAMP_CACHE_LIMIT = 8192
_stamps: dict[datetime, str] = {}


def sqlite_stamp(value: datetime) -> str:
    """The stored text of an instant: fixed width (YYYY-MM-DDTHH:MM:SS.ffffffZ), so that comparing texts
    compares instants."""
    # Remembered: a batch writes the same few instants many times (its received_at on every event and
    # row, the rows' first and creation instants). Equal aware datetimes are the same instant, so they
    # share a text; a naive one never equals an aware one.
    text = _stamps.get(value)
    if text is None:
        # In UTC isoformat always ends in +00:00; cutting it is cheaper than a naive copy.
        text = as_utc(value).isoformat(timespec="microseconds")[:-6] + "Z"
        if len(_stamps) >= _STAMP_CACHE_LIMIT:
            _stamps.clear()
        _stamps[value] = text
    return text


def from_stamp(text: str) -> datetime:
    """The instant of a stored text (ours are fixed width; anything else goes through parse_instant)."""
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return parse_instant(text)
    return parsed if parsed.tzinfo is not None else parse_instant(text)


async def _to_the_end(statement: Awaitable[_T]) -> _T:
    """Await ``statement`` until aiosqlite's thread has run it; a cancellation is delivered after that.

    aiosqlite runs a queued statement whether or not anyone still awaits it. anyio's shield holds
    back anyio's cancellation, but asyncio's own ``Task.cancel()`` (Quart cancels the handler of a
    client that went away, or one past its response timeout) passes through it.
    """
    future = asyncio.ensure_future(statement)
    interrupted = False
    with anyio.CancelScope(shield=True):
        while not future.done():
            try:
                await asyncio.wait((future,))
            except asyncio.CancelledError:
                interrupted = True
    if interrupted:
        raise asyncio.CancelledError from future.exception()
    return future.result()


class _SqliteTx:
    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        cursor = await self._conn.execute(sql, tuple(params))
        count = cursor.rowcount
        await cursor.close()
        return int(count)

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        await self._conn.executemany(sql, [tuple(r) for r in rows])

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        async with self._conn.execute(sql, tuple(params)) as cursor:
            return [tuple(r) for r in await cursor.fetchall()]


# SQLite's primary result codes (the low byte of an extended code) of a disk that refuses a write.
_STORAGE_FAULTS = frozenset(
    {sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN}
)


def _identity(path: str) -> tuple[int, int] | None:
    """The file at ``path`` (device, inode); None for an in-memory database or no file there."""
    if path == ":memory:":
        return None
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return info.st_dev, info.st_ino


class _WriteFaults:
    """Whether the file's last write transaction was refused by its disk. Invariant: ``failing`` iff
    the last one was."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.failing = False

    def refused(self, exc: sqlite3.OperationalError) -> StoreUnavailable | None:
        """``exc`` as ``StoreUnavailable`` when the disk refused the write, else None."""
        code = getattr(exc, "sqlite_errorcode", None)
        if code is None or code & 0xFF not in _STORAGE_FAULTS:
            return None
        name = getattr(exc, "sqlite_errorname", "")
        if not self.failing:
            self.failing = True
            log.warning("store: SQLite cannot write on %s: %s (%s); writes wait", self.path, exc, name)
        return StoreUnavailable(f"the store cannot write on {self.path}: {exc} ({name})")

    def lost(self) -> StoreUnavailable:
        """The file at the path is not the one opened (deleted or replaced under the process): a
        write would land in a file that vanishes at exit, so none is made. Nothing mends it here."""
        detail = (
            f"the store cannot write on {self.path}: the file was deleted or replaced under the running "
            "process; copy it back from /proc/<pid>/fd while the process runs, then restart"
        )
        if not self.failing:
            self.failing = True
            log.warning("store: %s; writes wait", detail)
        return StoreUnavailable(detail)

    def committed(self) -> None:
        if self.failing:
            self.failing = False
            log.warning("store: SQLite writes again on %s", self.path)


class SqliteDialect(SqlDialect):
    """The SQLite side of the seam; see the module docstring."""

    dialect = "sqlite"

    def __init__(self, path: str, *, lease_s: float = 30.0) -> None:
        self._path = path
        self._conn: aiosqlite.Connection | None = None
        self._lock = anyio.Lock()
        self.lease_s = lease_s
        self._faults = _WriteFaults(path)
        self._opened: tuple[int, int] | None = None  # the file opened (device, inode); None: in memory

    async def open(self) -> None:
        if self._path != ":memory:":
            prepare_state_file(Path(self._path))
        conn = await aiosqlite.connect(self._path, isolation_level=None)
        for pragma in (
            "PRAGMA journal_mode=WAL",
            "PRAGMA synchronous=NORMAL",
            "PRAGMA foreign_keys=ON",
            "PRAGMA busy_timeout=10000",
        ):
            await conn.execute(pragma)
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        self._conn = conn
        self._opened = _identity(self._path)

    def _same_file(self) -> bool:
        return self._opened is None or _identity(self._path) == self._opened

    async def aclose(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    @property
    def conn(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise RuntimeError("the SQLite store is not open")
        return self._conn

    @asynccontextmanager
    async def tx(self) -> AsyncIterator[Tx]:
        async with self._lock:
            conn = self.conn
            if not self._same_file():
                raise self._faults.lost()
            try:
                await _to_the_end(conn.execute("BEGIN IMMEDIATE"))
                yield _SqliteTx(conn)
                await _to_the_end(conn.execute("COMMIT"))
                self._faults.committed()
            except sqlite3.OperationalError as exc:
                refused = self._faults.refused(exc)
                if refused is None:
                    raise
                raise refused from exc
            finally:
                # Whatever ended the body (an error, a cancellation, a failed COMMIT), the connection
                # leaves this lock with no transaction open. A body statement still running in the
                # thread runs before this ROLLBACK: the thread takes statements in order.
                if conn.in_transaction:
                    await _to_the_end(conn.execute("ROLLBACK"))

    async def write_check(self) -> None:
        async with self.tx() as tx:
            # Rewriting the header's user_version (unused by Tally) commits one page: it fails
            # when the disk is full, where a statement that changes no row would not.
            [(version,)] = await tx.fetchall("PRAGMA user_version")
            await tx.execute(f"PRAGMA user_version = {int(version)}")

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        async with self._lock, self.conn.execute(sql, tuple(params)) as cursor:
            return [tuple(r) for r in await cursor.fetchall()]

    def write_steps(self) -> WriteSteps:
        return SqlSteps(self)

    # -- conversions ----------------------------------------------------------------------------------
    def ts(self, value: datetime) -> Any:
        return sqlite_stamp(value)

    def from_ts(self, value: Any) -> datetime:
        return from_stamp(str(value))

    def js(self, value: Any) -> Any:
        return canonical_json(value)

    def from_js(self, value: Any) -> Any:
        return loads_json(value)

    def id_list(self, ids: Sequence[str]) -> Any:
        return json.dumps(list(ids))

    def from_id_list(self, value: Any) -> tuple[str, ...]:
        return tuple(json.loads(value))

    def bucket_expr(self, interval: Bucket) -> str:
        if interval == "1h":
            return "substr(timestamp, 1, 13) || ':00:00.000000Z'"
        return "substr(timestamp, 1, 10) || 'T00:00:00.000000Z'"

    def integrity_errors(self) -> tuple[type[BaseException], ...]:
        return (sqlite3.IntegrityError,)

    # -- migrations -----------------------------------------------------------------------------------
    async def run_migration(self, migration: Migration, *, up: bool) -> None:
        if up:
            record = (
                f"INSERT INTO schema_migrations (version, name, applied_at) "
                f"VALUES ({migration.version}, '{migration.name}', '{sqlite_stamp(utc_now())}');"
            )
            body = migration.up
        else:
            record = f"DELETE FROM schema_migrations WHERE version = {migration.version};"
            body = migration.down
        # executescript commits any open transaction first, so the script carries its own BEGIN/COMMIT.
        script = f"BEGIN IMMEDIATE;\n{body}\n{record}\nCOMMIT;"
        async with self._lock:
            try:
                await _to_the_end(self.conn.executescript(script))
            except sqlite3.Error as exc:
                if self.conn.in_transaction:
                    await _to_the_end(self.conn.execute("ROLLBACK"))
                direction = "up" if up else "down"
                raise MigrationError(
                    f"migration sqlite/{migration.version:04d}_{migration.name} ({direction}) failed: {exc}"
                ) from exc

    # -- the sync lock --------------------------------------------------------------------------------
    async def _take_lease(self, cloud: str, holder: str) -> bool:
        now = utc_now()
        async with self.tx() as tx:
            count = await tx.execute(
                "INSERT INTO sync_locks (cloud, holder, expires_at) VALUES (?, ?, ?) "
                "ON CONFLICT (cloud) DO UPDATE SET "
                "holder = excluded.holder, expires_at = excluded.expires_at "
                "WHERE sync_locks.expires_at < ? OR sync_locks.holder = excluded.holder",
                (cloud, holder, sqlite_stamp(now + timedelta(seconds=self.lease_s)), sqlite_stamp(now)),
            )
        return count > 0

    async def _keep_lease(self, cloud: str, holder: str) -> None:
        while True:
            await anyio.sleep(self.lease_s / 3)
            if not await self._take_lease(cloud, holder):
                log.warning("sync lock lease lost cloud=%s holder=%s", cloud, holder)
                return

    async def _release_lease(self, cloud: str, holder: str) -> None:
        async with self.tx() as tx:
            await tx.execute("DELETE FROM sync_locks WHERE cloud = ? AND holder = ?", (cloud, holder))

    @asynccontextmanager
    async def sync_lock(self, cloud: str) -> AsyncIterator[None]:
        holder = str(uuid.uuid4())
        if not await self._take_lease(cloud, holder):
            raise SyncLockHeld(cloud)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._keep_lease, cloud, holder)
                try:
                    yield
                finally:
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._release_lease(cloud, holder)


def SqliteStore(path: str, *, lease_s: float = 30.0) -> SqlStore:
    """The store of the SQLite file at ``path`` (``:memory:`` for none): the roles over ``SqliteDialect``
    (named as the class it used to be, since callers build it as one); ``lease_s`` is its sync lock's
    lease."""
    return SqlStore(SqliteDialect(path, lease_s=lease_s))
