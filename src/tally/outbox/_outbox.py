"""The outbox: a SQLite file (WAL) between the bus and the sink, so an ack never outruns a commit.

A row is an event the consumer has committed and the sink has not accepted
yet. ``event_id`` is unique, so a redelivered notification adds no second row
(``INSERT OR IGNORE``). Writes come in groups: the consumer hands over what it
has in hand and acks those deliveries once ``add`` returned, which is what
lets one fsync-bound file keep up with the bus (docs/benchmarks.md, section "collector").

One connection serves both the consumer and the sender; a lock keeps each
write transaction whole, because sqlite3's implicit transactions would
otherwise let one task's commit carry the other's half-done statements.

An event the sink cannot take at all (it answers 5xx for that item alone while
taking others) moves to ``dead_letters`` in the same file: kept with its reason,
counted in metrics, listed by ``tally collector dead-letters`` and moved back to
the outbox by ``tally collector replay``. That command may run in another
process while the collector runs: ``refresh`` (the sender calls it every flush
interval) counts the rows it put back.

Every commit that adds rows (``add``, ``replay``, a ``refresh`` that finds more) drops a notice in the
mailbox of the one actor that asked for them (``tell_commits``: the sender), so that it delivers at
once instead of looking on a timer. The mailbox holds one notice: one pending says "rows were
committed since you last looked", however many commits there were.

A write that cannot commit (a full disk, a read-only file) is rolled back and
raised as ``OutboxWriteError``; ``write_problem`` names it until a write
commits again (``_write_fault``). A file deleted or replaced under the process is found before the
consumer's writes and the probe's (``_lost_file``): written back when it can be, else the same error.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Collection, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiosqlite
import anyio

from tally.actors import Mailbox
from tally.config import prepare_state_file

from . import _metrics
from ._lost_file import identity, mendable, write_back
from ._write_fault import OutboxWriteError, WriteFaults, classify

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL UNIQUE,
    body BLOB NOT NULL,
    enqueued_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS dead_letters (
    event_id TEXT PRIMARY KEY,
    body BLOB NOT NULL,
    enqueued_at REAL NOT NULL,
    dead_lettered_at REAL NOT NULL,
    reason TEXT NOT NULL
);
"""


@dataclass(frozen=True, slots=True)
class OutboxRow:
    seq: int
    event_id: str
    body: bytes
    enqueued_at: float


@dataclass(frozen=True, slots=True)
class DeadLetterRow:
    """An event the sink could not take; Unix times."""

    event_id: str
    body: bytes
    enqueued_at: float
    dead_lettered_at: float
    reason: str


@dataclass(frozen=True, slots=True)
class OutboxStatistics:
    """depth: rows waiting; oldest_enqueued_at: Unix time of the oldest row, None when empty."""

    depth: int
    oldest_enqueued_at: float | None


class Outbox:
    """Use ``open_outbox``; the constructor takes an already opened connection."""

    def __init__(
        self, db: aiosqlite.Connection, depth: int, oldest: float | None, dead: int = 0, *, path: Path
    ) -> None:
        self._db = db
        self._lock = anyio.Lock()
        self._faults = WriteFaults(path)
        self._opened = identity(path)  # the file SQLite opened, told from what its path names later
        # Invariant: equals SELECT COUNT(*) FROM outbox after every committed write of this process
        # and after every refresh (rows another process put back are counted from then on).
        self._depth = depth
        self._oldest = oldest
        self._changed = anyio.Event()
        self._commits: Mailbox[None] | None = None
        _metrics.DEPTH.set(depth)
        _metrics.DEAD_LETTERS.set(dead)
        _metrics.OLDEST_AGE.set_function(self._oldest_age)

    def _oldest_age(self) -> float:
        return 0.0 if self._oldest is None else max(0.0, time.time() - self._oldest)

    @property
    def depth(self) -> int:
        return self._depth

    @property
    def write_problem(self) -> OutboxWriteError | None:
        """Why the last write could not commit, or None once one did (or before any was tried)."""
        return self._faults.problem

    async def check_writable(self, *, fresh_s: float = 5.0) -> OutboxWriteError | None:
        """Why the outbox cannot write, or None. The last write's outcome when it is younger than
        ``fresh_s``; else a probe: the header's user_version rewritten, one page committed, which a
        full disk refuses (``/readyz`` calls this, so an idle outbox is checked too)."""
        last = self._faults.last_outcome_at
        if last is not None and time.monotonic() - last < fresh_s:
            return self._faults.problem
        with contextlib.suppress(OutboxWriteError):
            async with self._writing(own_file=True) as db:
                cursor = await db.execute("PRAGMA user_version")
                found = await cursor.fetchone()
                await db.execute(f"PRAGMA user_version = {int(found[0]) if found else 0}")
                await db.commit()
        return self._faults.problem

    @asynccontextmanager
    async def _writing(self, *, own_file: bool = False) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction under the lock: committed by the caller, rolled back on a storage
        fault, which is raised as ``OutboxWriteError`` and recorded. ``own_file``: first make sure
        the path still names the file written (what an ack waits on must outlive the process)."""
        async with self._lock:
            if own_file:
                try:
                    await self._keep_file()
                except OutboxWriteError as lost:
                    self._faults.failed(lost)
                    raise
            try:
                yield self._db
            except sqlite3.OperationalError as exc:
                error = classify(exc, self._faults.path)
                with anyio.CancelScope(shield=True):
                    await self._roll_back()
                self._faults.failed(error)
                raise error from exc
        if own_file:
            # Only a write that found its file at the path tells that the outbox writes again: the
            # sender's deletes commit into an unlinked file as well while the directory is gone.
            self._faults.succeeded()

    async def _keep_file(self) -> None:
        """Write the open database back to its path if the file was deleted (``_lost_file``)."""
        if not mendable(self._faults.path, self._opened):
            return
        with anyio.CancelScope(shield=True):  # the old connection is closed only once replaced
            restored, self._opened = await write_back(self._db, self._faults.path)
            old, self._db = self._db, restored
            await _configure(restored)
            with contextlib.suppress(sqlite3.Error):
                await old.close()
        log.warning(
            "outbox: the file %s was deleted under the running process; written back from the open "
            "file (%d rows waiting)",
            self._faults.path,
            self._depth,
        )

    async def close(self) -> None:
        await self._db.close()

    async def _roll_back(self) -> None:
        # Nothing of the failed transaction is committed either way; the next write tells more.
        with contextlib.suppress(sqlite3.Error):
            await self._db.rollback()

    def statistics(self) -> OutboxStatistics:
        return OutboxStatistics(self._depth, self._oldest)

    def _notify(self) -> None:
        _metrics.DEPTH.set(self._depth)
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_changed(self) -> None:
        """Return after the next committed write."""
        await self._changed.wait()

    def tell_commits(self, mailbox: Mailbox[None]) -> None:
        """Drop a notice in ``mailbox`` after each commit that adds rows (see the module docstring)."""
        self._commits = mailbox

    def _committed(self) -> None:
        if self._commits is None:
            return
        # Full: a notice is pending already, which says the same.
        with contextlib.suppress(anyio.WouldBlock):
            self._commits.send_nowait(None)

    async def add(self, rows: Sequence[tuple[str, bytes]]) -> int:
        """Commit ``(event_id, body)`` rows in one transaction; returns how many were new."""
        if not rows:
            return 0
        now = time.time()
        async with self._writing(own_file=True) as db:
            cursor = await db.executemany(
                "INSERT OR IGNORE INTO outbox (event_id, body, enqueued_at) VALUES (?, ?, ?)",
                [(event_id, body, now) for event_id, body in rows],
            )
            added = max(cursor.rowcount, 0)
            await db.commit()
        self._depth += added
        if added and self._oldest is None:
            self._oldest = now
        self._notify()
        if added:
            self._committed()
        return added

    async def peek(self, limit: int, *, skip: Collection[int] = ()) -> list[OutboxRow]:
        """The oldest ``limit`` rows, in the order they were committed, leaving out the seqs ``skip``."""
        marks = ", ".join("?" for _ in skip)
        async with self._lock:
            cursor = await self._db.execute(
                "SELECT seq, event_id, body, enqueued_at FROM outbox "
                f"WHERE seq NOT IN ({marks}) ORDER BY seq LIMIT ?",
                (*skip, limit),
            )
            fetched = await cursor.fetchall()
        return [OutboxRow(int(r[0]), str(r[1]), bytes(r[2]), float(r[3])) for r in fetched]

    async def remove(self, seqs: Sequence[int]) -> int:
        """Delete rows the sink accepted; returns how many went."""
        if not seqs:
            return 0
        async with self._writing() as db:
            cursor = await db.executemany("DELETE FROM outbox WHERE seq = ?", [(s,) for s in seqs])
            removed = max(cursor.rowcount, 0)
            await db.commit()
            head = await self._head()
        self._depth -= removed
        self._oldest = head
        self._notify()
        return removed

    async def _head(self) -> float | None:
        cursor = await self._db.execute("SELECT enqueued_at FROM outbox ORDER BY seq LIMIT 1")
        head = await cursor.fetchone()
        return float(head[0]) if head is not None else None

    async def dead_letter(self, row: OutboxRow, reason: str) -> None:
        """Move ``row`` out of the outbox into ``dead_letters``, in one transaction."""
        async with self._writing() as db:
            # REPLACE: the bus may redeliver an event already dead-lettered, which fails again.
            await db.execute(
                "INSERT OR REPLACE INTO dead_letters (event_id, body, enqueued_at, dead_lettered_at, reason) "
                "VALUES (?, ?, ?, ?, ?)",
                (row.event_id, row.body, row.enqueued_at, time.time(), reason),
            )
            cursor = await db.execute("DELETE FROM outbox WHERE seq = ?", (row.seq,))
            removed = max(cursor.rowcount, 0)
            await db.commit()
            head = await self._head()
            dead = await self._dead_count()
        self._depth -= removed
        self._oldest = head
        _metrics.DEAD_LETTERS.set(dead)
        _metrics.EVENTS_DEAD_LETTERED.inc()
        self._notify()

    async def _dead_count(self) -> int:
        cursor = await self._db.execute("SELECT COUNT(*) FROM dead_letters")
        found = await cursor.fetchone()
        return int(found[0]) if found is not None else 0

    async def dead_letters(self) -> list[DeadLetterRow]:
        """Every dead-lettered event, oldest first."""
        async with self._lock:
            cursor = await self._db.execute(
                "SELECT event_id, body, enqueued_at, dead_lettered_at, reason FROM dead_letters "
                "ORDER BY dead_lettered_at, event_id"
            )
            fetched = await cursor.fetchall()
        return [DeadLetterRow(str(r[0]), bytes(r[1]), float(r[2]), float(r[3]), str(r[4])) for r in fetched]

    async def replay(self, event_ids: Sequence[str] | None = None) -> list[str]:
        """Move dead letters (``event_ids``, or all of them) back to the outbox's tail; the ids moved."""
        async with self._writing():
            if event_ids is None:
                cursor = await self._db.execute("SELECT event_id FROM dead_letters ORDER BY dead_lettered_at")
            else:
                marks = ", ".join("?" for _ in event_ids)
                cursor = await self._db.execute(
                    f"SELECT event_id FROM dead_letters WHERE event_id IN ({marks}) "
                    "ORDER BY dead_lettered_at",
                    tuple(event_ids),
                )
            moved = [str(r[0]) for r in await cursor.fetchall()]
            now = time.time()
            cursor = await self._db.executemany(
                "INSERT OR IGNORE INTO outbox (event_id, body, enqueued_at) "
                "SELECT event_id, body, ? FROM dead_letters WHERE event_id = ?",
                [(now, event_id) for event_id in moved],
            )
            added = max(cursor.rowcount, 0)
            await self._db.executemany("DELETE FROM dead_letters WHERE event_id = ?", [(e,) for e in moved])
            await self._db.commit()
            dead = await self._dead_count()
        self._depth += added
        if added and self._oldest is None:
            self._oldest = now
        _metrics.DEAD_LETTERS.set(dead)
        self._notify()
        if added:
            self._committed()
        return moved

    async def refresh(self) -> None:
        """Count the rows again, for rows another process wrote (``tally collector replay``)."""
        async with self._lock:
            cursor = await self._db.execute("SELECT COUNT(*) FROM outbox")
            found = await cursor.fetchone()
            depth = int(found[0]) if found is not None else 0
            head = await self._head()
            dead = await self._dead_count()
        _metrics.DEAD_LETTERS.set(dead)
        if depth != self._depth:
            grew = depth > self._depth
            self._depth = depth
            self._oldest = head
            self._notify()
            if grew:
                self._committed()


@asynccontextmanager
async def open_outbox(path: Path | str) -> AsyncIterator[Outbox]:
    """Open (creating if needed) the outbox file at ``path``; closes it on exit. A file that cannot be
    opened for writing (a full disk refuses the WAL's files) is ``OutboxWriteError``."""
    path = Path(path)
    prepare_state_file(path)
    try:
        db = await aiosqlite.connect(str(path))
    except sqlite3.OperationalError as exc:
        raise _cannot_open(exc, path) from exc
    outbox: Outbox | None = None
    try:
        try:
            outbox = await _set_up(db, path)
        except sqlite3.OperationalError as exc:
            raise _cannot_open(exc, path) from exc
        yield outbox
    finally:
        with anyio.CancelScope(shield=True):
            # The outbox's connection: another than ``db`` once a deleted file was written back.
            await (db.close() if outbox is None else outbox.close())


def _cannot_open(exc: sqlite3.OperationalError, path: Path) -> OutboxWriteError:
    error = classify(exc, path)
    _metrics.WRITE_ERRORS.labels(error.reason).inc()
    _metrics.WRITE_FAILING.set(1)
    return error


async def _set_up(db: aiosqlite.Connection, path: Path) -> Outbox:
    """The pragmas and the tables, then the counts the ``Outbox`` starts from."""
    await _configure(db)
    await db.executescript(_SCHEMA)
    await db.commit()
    cursor = await db.execute(
        "SELECT COUNT(*), MIN(enqueued_at), (SELECT COUNT(*) FROM dead_letters) FROM outbox"
    )
    row = await cursor.fetchone()
    depth = int(row[0]) if row is not None else 0
    oldest = float(row[1]) if row is not None and row[1] is not None else None
    dead = int(row[2]) if row is not None else 0
    return Outbox(db, depth, oldest, dead, path=path)


async def _configure(db: aiosqlite.Connection) -> None:
    await db.execute("PRAGMA journal_mode=WAL")
    # The broker forgets a message once acked, so a commit that preceded an ack must survive
    # a power loss too: FULL costs one fsync per group commit, not one per event.
    await db.execute("PRAGMA synchronous=FULL")
    await db.execute("PRAGMA busy_timeout=5000")
