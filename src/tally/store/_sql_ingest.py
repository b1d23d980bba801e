"""The ingest part of the shared SQL: a batch of events written and folded into the projection.

Deduplication, the fold plan (pure: which keys advance, which replay) and the
plain batch writer; ``IngestSql`` runs them over the events, projection and
audit mixins in one transaction. PostgreSQL writes a batch its own way.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime

from tally.core import (
    Event,
    ResourceKey,
    ResourceRow,
    StoredEvent,
    advance,
    as_utc,
    needs_replay,
    project,
    utc_now,
)

from ._interface import AuditEntry, BatchOutcome, BatchWriter, DeadLetter
from ._seam import Tx
from ._sql_audit import AuditSql
from ._sql_projection import ProjectionSql
from ._sql_text import key_order


def dedupe(events: Sequence[Event]) -> tuple[list[Event], list[Event]]:
    """The distinct events sorted by (event_id, timestamp), and the repeats inside the batch."""
    unique: dict[tuple[str, datetime], Event] = {}
    duplicates: list[Event] = []
    for event in events:
        pair = (event.event_id, event.timestamp)
        if pair in unique:
            duplicates.append(event)
        else:
            unique[pair] = event
    # Sorted inserts take index locks in one order, so concurrent batches cannot deadlock.
    return [unique[pair] for pair in sorted(unique)], duplicates


@dataclass(frozen=True, slots=True)
class FoldPlan:
    """The fold of a batch as far as the rows read allow: keys in key order, the keys whose new events
    sort before their row's newest (replayed from history), and the advanced rows of all the others
    (in key order)."""

    keys: list[ResourceKey]
    replay: list[ResourceKey]
    advanced: dict[ResourceKey, ResourceRow | None]

    def rows_without_replay(self) -> list[ResourceRow] | None:
        """Every folded row in key order when nothing needs a replay, else None."""
        if self.replay:
            return None
        return [row for row in self.advanced.values() if row is not None]


def group_by_key(new: Iterable[StoredEvent]) -> dict[ResourceKey, list[StoredEvent]]:
    groups: dict[ResourceKey, list[StoredEvent]] = defaultdict(list)
    for stored in new:
        groups[stored.event.key].append(stored)
    return groups


def plan_fold(
    groups: Mapping[ResourceKey, Sequence[StoredEvent]], rows: Mapping[ResourceKey, ResourceRow]
) -> FoldPlan:
    """Advance every key's row that needs no replay by its new events (pure: no I/O)."""
    keys = sorted(groups, key=key_order)
    replay: list[ResourceKey] = []
    advanced: dict[ResourceKey, ResourceRow | None] = {}
    for key in keys:
        new = groups[key]
        row = rows.get(key)
        if needs_replay(row, new):
            replay.append(key)
        else:
            advanced[key] = advance(row, new)
    return FoldPlan(keys, replay, advanced)


class _SqlBatch:
    """The plain batch of ``IngestSql.open_batch``: events are kept until ``finish`` writes them."""

    def __init__(self, store: IngestSql, tx: Tx, at: datetime) -> None:
        self._store = store
        self._tx = tx
        self._at = at
        self._events: list[Event] = []

    async def add(self, events: Sequence[Event]) -> None:
        self._events.extend(events)

    async def finish(
        self, *, dead_letters: Sequence[DeadLetter] = (), audits: Sequence[AuditEntry] = ()
    ) -> BatchOutcome:
        return await self._store._write_in(self._tx, self._events, dead_letters, audits, self._at)


class IngestSql(ProjectionSql, AuditSql):
    """Store methods that write a batch of events and fold it; see the module docstring."""

    async def write_batch(
        self,
        events: Sequence[Event],
        *,
        dead_letters: Sequence[DeadLetter] = (),
        audits: Sequence[AuditEntry] = (),
        received_at: datetime | None = None,
    ) -> BatchOutcome:
        at = as_utc(received_at) if received_at is not None else utc_now()
        async with self._tx() as tx:
            return await self._write_in(tx, events, dead_letters, audits, at)

    @asynccontextmanager
    async def open_batch(
        self, keys: Iterable[ResourceKey], *, received_at: datetime | None = None
    ) -> AsyncIterator[BatchWriter]:
        """The plain batch: its transaction begins now (a write transaction holds the database alone,
        so nothing else needs locking) and everything is written at ``finish``."""
        at = as_utc(received_at) if received_at is not None else utc_now()
        async with self._tx() as tx:
            yield _SqlBatch(self, tx, at)

    async def _write_in(
        self,
        tx: Tx,
        events: Sequence[Event],
        dead_letters: Sequence[DeadLetter],
        audits: Sequence[AuditEntry],
        at: datetime,
    ) -> BatchOutcome:
        ordered, duplicates = dedupe(events)
        inserted = await self._insert_events(tx, ordered, at) if ordered else []
        new_pairs = {(e.event_id, e.timestamp) for e in inserted}
        duplicates.extend(e for e in ordered if (e.event_id, e.timestamp) not in new_pairs)
        replayed = await self._fold(tx, [StoredEvent(e, at) for e in inserted])
        await self._write_extras(tx, dead_letters, audits, at)
        return BatchOutcome(tuple(inserted), tuple(duplicates), tuple(replayed))

    async def _fold(
        self, tx: Tx, new: Sequence[StoredEvent], rows: Mapping[ResourceKey, ResourceRow] | None = None
    ) -> list[ResourceKey]:
        """Fold new events into the projection per key in key order; return the keys replayed.

        ``rows``: the current rows of (at least) these keys, already read under their locks; when None
        they are locked and read here.
        """
        if not new:
            return []
        groups = group_by_key(new)
        if rows is None:
            keys = sorted(groups, key=key_order)
            await self._lock_keys(tx, keys)
            rows = await self._load_rows(tx, keys)
        return await self._finish_fold(tx, plan_fold(groups, rows))

    async def _finish_fold(self, tx: Tx, plan: FoldPlan) -> list[ResourceKey]:
        """Replay the keys that need it from their stored history and write every folded row."""
        histories = await self._load_histories(tx, plan.replay) if plan.replay else {}
        folded: list[ResourceRow] = []
        for key in plan.keys:
            row = project(histories[key]) if key in histories else plan.advanced.get(key)
            if row is not None:
                folded.append(row)
        await self._upsert_rows(tx, folded)
        return plan.replay
