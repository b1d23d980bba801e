"""The steps of the ingest path as plain statements, each run at once: SQLite's ``WriteSteps``.

SQLite's write transaction (BEGIN IMMEDIATE) holds the database alone, so nothing is gained by
sending a statement before its answer is needed: each step runs its statements and hands back an
answer already there. The path itself is ``_sql_ingest``; PostgreSQL's steps are ``_pg_steps``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import TypeVar

from tally.core import Event, ResourceKey, ResourceRow

from ._seam import Answer, EventPair, Tx
from ._sql_dialect import SqlDialect
from ._sql_ingest import _pair
from ._sql_text import (
    EVENT_COLUMNS,
    EVENT_SELECT,
    KEY_CHUNK,
    ROW_COLUMNS,
    ROW_SELECT,
    key_params,
    rows_by_key_sql,
)

T = TypeVar("T")


def answered(value: T) -> Answer[T]:
    """The answer of a statement already run."""

    async def answer() -> T:
        return value

    return answer


class SqlSteps:
    """The ingest path's steps over a dialect, each statement run at once; see the module docstring."""

    def __init__(self, sql: SqlDialect) -> None:
        # The seam's operations its statements call, bound once (no lookup through ``sql`` per call).
        self._tx = sql.tx
        self._row = sql.row
        self._row_params = sql.row_params
        self._event_params = sql.event_params
        self.from_ts = sql.from_ts

    def batch_tx(self) -> AbstractAsyncContextManager[Tx]:
        return self._tx()

    async def lock_keys(self, tx: Tx, keys: Sequence[ResourceKey]) -> None:
        # BEGIN IMMEDIATE already makes every write transaction the only writer of the file.
        return None

    async def send_row_read(self, tx: Tx, keys: Sequence[ResourceKey]) -> Answer[list[ResourceRow]]:
        return answered(list((await self._load_rows(tx, keys)).values()))

    async def send_insert(self, tx: Tx, events: Sequence[Event], at: datetime) -> Answer[set[EventPair]]:
        return answered({_pair(e) for e in await self._insert_events(tx, events, at)})

    async def _load_rows(self, tx: Tx, keys: Sequence[ResourceKey]) -> dict[ResourceKey, ResourceRow]:
        rows: dict[ResourceKey, ResourceRow] = {}
        for start in range(0, len(keys), KEY_CHUNK):
            chunk = keys[start : start + KEY_CHUNK]
            for rec in await tx.fetchall(rows_by_key_sql(len(chunk)), key_params(chunk)):
                row = self._row(rec)
                rows[row.key] = row
        return rows

    async def upsert_rows(self, tx: Tx, rows: Sequence[ResourceRow]) -> None:
        marks = ", ".join("?" for _ in ROW_COLUMNS)
        updates = ", ".join(f"{c} = excluded.{c}" for c in ROW_COLUMNS[3:])
        await tx.executemany(
            f"INSERT INTO current_resources ({ROW_SELECT}) VALUES ({marks}) "
            f"ON CONFLICT (cloud, resource_type, resource_id) DO UPDATE SET {updates}",
            [self._row_params(r) for r in rows],
        )

    async def _insert_events(self, tx: Tx, events: Sequence[Event], received_at: datetime) -> list[Event]:
        """Insert the events that are not stored yet; return those (the others are duplicates)."""
        stored: set[tuple[str, datetime]] = set()
        ids = sorted({e.event_id for e in events})
        for start in range(0, len(ids), KEY_CHUNK):
            chunk = ids[start : start + KEY_CHUNK]
            marks = ", ".join("?" for _ in chunk)
            for rec in await tx.fetchall(
                f"SELECT event_id, timestamp FROM events WHERE event_id IN ({marks})", chunk
            ):
                stored.add((rec[0], self.from_ts(rec[1])))
        fresh = [e for e in events if (e.event_id, e.timestamp) not in stored]
        if fresh:
            marks = ", ".join("?" for _ in EVENT_COLUMNS)
            await tx.executemany(
                f"INSERT INTO events ({EVENT_SELECT}) VALUES ({marks}) ON CONFLICT DO NOTHING",
                [self._event_params(e, received_at) for e in fresh],
            )
        return fresh
