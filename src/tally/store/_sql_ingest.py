"""The ingest path of both dialects, written once: a batch of events written and folded into the projection.

A batch opens its transaction (``batch_tx``), locks the resource keys it is
told of and sends the read of their rows; each ``add`` deduplicates the events
against the batch (``BatchEvents``), locks and reads the keys they are first to
name, and sends the insert of the new ones (a conflict on (event_id, timestamp)
is a duplicate); ``finish`` collects what was sent, folds the inserted events
into the rows a chunk of keys at a time (``plan_fold``, pure) and writes the
dead letters and audit rows, all in the one transaction.

How each step reaches the database is the dialect's (``_seam.WriteSteps``, handed to
``IngestSql``): ``send_row_read`` and ``send_insert`` hand back an ``Answer`` to await
later. SQLite runs each statement at once (its write transaction holds the database
alone: ``_sql_steps``); PostgreSQL sends each as one statement of arrays in pipeline
mode, so the database works while the caller validates the next items (``_pg_steps``).
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
from ._seam import Answer, EventPair, Tx, WriteSteps
from ._sql_audit import AuditSql
from ._sql_events import EventsSql
from ._sql_text import key_order

# Keys folded and upserted at a time: PostgreSQL writes one chunk while the next is folded here.
FOLD_CHUNK = 128


def _pair(event: Event) -> EventPair:
    return (event.event_id, event.timestamp)


def group_by_key(new: Iterable[StoredEvent]) -> dict[ResourceKey, list[StoredEvent]]:
    groups: dict[ResourceKey, list[StoredEvent]] = defaultdict(list)
    for stored in new:
        groups[stored.event.key].append(stored)
    return groups


class BatchEvents:
    """The events handed to one batch (pure: no I/O): deduplicated against each other as they come,
    grouped by key, and, once the store says which it inserted, split into new and duplicates."""

    def __init__(self, at: datetime) -> None:
        self._at = at
        self._added: dict[EventPair, Event] = {}
        self._repeats: list[Event] = []
        # Each event's key is built once: keys are hashed many times on the way and are not cheap.
        self._groups: dict[ResourceKey, list[StoredEvent]] = {}

    def take(self, events: Sequence[Event]) -> tuple[list[Event], list[ResourceKey]]:
        """The events new to the batch sorted by (event_id, timestamp), and the keys they are the
        first to name. Sorted inserts take index locks in one order, so concurrent batches cannot
        deadlock."""
        added, fresh = self._added, []
        for event in events:
            pair = (event.event_id, event.timestamp)
            if pair in added:
                self._repeats.append(event)
            else:
                added[pair] = event
                fresh.append(event)
        fresh.sort(key=_pair)
        groups, at, first = self._groups, self._at, []
        for event in fresh:
            key = event.key
            group = groups.get(key)
            if group is None:
                groups[key] = [StoredEvent(event, at)]
                first.append(key)
            else:
                group.append(StoredEvent(event, at))
        return fresh, first

    def settle(
        self, stored: set[EventPair]
    ) -> tuple[list[Event], list[Event], Mapping[ResourceKey, Sequence[StoredEvent]]]:
        """Given the pairs the store inserted: the inserted events, the duplicates (inside the batch
        or stored already), and the inserted events grouped by key."""
        added = list(self._added.values())
        duplicates = list(self._repeats)
        if len(stored) == len(added):
            return added, duplicates, self._groups
        inserted = [e for e in added if _pair(e) in stored]
        duplicates.extend(e for e in added if _pair(e) not in stored)
        return inserted, duplicates, group_by_key(StoredEvent(e, self._at) for e in inserted)


@dataclass(frozen=True, slots=True)
class FoldPlan:
    """The fold of a batch as far as the rows read allow: keys in key order, the keys whose new events
    sort before their row's newest (replayed from history), and the advanced rows of all the others
    (in key order)."""

    keys: list[ResourceKey]
    replay: list[ResourceKey]
    advanced: dict[ResourceKey, ResourceRow | None]


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


class SqlBatch:
    """One batch in one transaction (see the module docstring). Events of keys not named at the
    opening lock those keys when they come; a late event costs one more round trip for the history
    it replays."""

    def __init__(self, store: IngestSql, tx: Tx, at: datetime) -> None:
        self._store = store
        self._tx = tx
        self._at = at
        self._events = BatchEvents(at)
        self._locked: set[ResourceKey] = set()
        self._reads: list[Answer[list[ResourceRow]]] = []
        self._inserts: list[Answer[set[EventPair]]] = []

    async def lock_and_read(self, keys: Sequence[ResourceKey]) -> None:
        """Lock ``keys`` (in key order) and send the read of their rows."""
        if not keys:
            return
        # The lock comes first: the row read runs after it, so it sees every committed fold.
        await self._store._lock_keys(self._tx, keys)
        self._reads.append(await self._store._send_row_read(self._tx, keys))
        self._locked.update(keys)

    async def add(self, events: Sequence[Event]) -> None:
        fresh, first = self._events.take(events)
        if not fresh:
            return
        locked = self._locked
        await self.lock_and_read(sorted((k for k in first if k not in locked), key=key_order))
        self._inserts.append(await self._store._send_insert(self._tx, fresh, self._at))

    async def finish(
        self, *, dead_letters: Sequence[DeadLetter] = (), audits: Sequence[AuditEntry] = ()
    ) -> BatchOutcome:
        store, tx = self._store, self._tx
        rows: dict[ResourceKey, ResourceRow] = {}
        for read in self._reads:
            for row in await read():
                rows[row.key] = row
        stored: set[EventPair] = set()
        for insert in self._inserts:
            stored.update(await insert())
        inserted, duplicates, groups = self._events.settle(stored)
        replayed = await store._fold_in_chunks(tx, groups, rows)
        await store._write_extras(tx, dead_letters, audits, self._at)
        return BatchOutcome(tuple(inserted), tuple(duplicates), tuple(replayed))


class IngestSql:
    """Store methods that write a batch of events and fold it; see the module docstring."""

    def __init__(self, events: EventsSql, audit: AuditSql, steps: WriteSteps) -> None:
        # The other roles' statements and the dialect's steps the path calls, bound once.
        self._load_histories = events.load_histories
        self._write_extras = audit.write_extras
        self._batch_tx = steps.batch_tx
        self._lock_keys = steps.lock_keys
        self._send_row_read = steps.send_row_read
        self._send_insert = steps.send_insert
        self._upsert_rows = steps.upsert_rows

    async def write_batch(
        self,
        events: Sequence[Event],
        *,
        dead_letters: Sequence[DeadLetter] = (),
        audits: Sequence[AuditEntry] = (),
        received_at: datetime | None = None,
    ) -> BatchOutcome:
        async with self.open_batch({e.key for e in events}, received_at=received_at) as batch:
            await batch.add(events)
            return await batch.finish(dead_letters=dead_letters, audits=audits)

    @asynccontextmanager
    async def open_batch(
        self, keys: Iterable[ResourceKey], *, received_at: datetime | None = None
    ) -> AsyncIterator[BatchWriter]:
        at = as_utc(received_at) if received_at is not None else utc_now()
        async with self._batch_tx() as tx:
            batch = SqlBatch(self, tx, at)
            await batch.lock_and_read(sorted(set(keys), key=key_order))
            yield batch

    # -- the fold --------------------------------------------------------------------------------------
    async def _fold_in_chunks(
        self,
        tx: Tx,
        groups: Mapping[ResourceKey, Sequence[StoredEvent]],
        rows: Mapping[ResourceKey, ResourceRow],
    ) -> list[ResourceKey]:
        """Fold the new events into ``rows`` (read under their keys' locks) per key in key order, a
        chunk of keys at a time, each chunk's rows upserted as soon as it is folded; return the keys
        replayed."""
        replayed: list[ResourceKey] = []
        keys = sorted(groups, key=key_order)
        for start in range(0, len(keys), FOLD_CHUNK):
            chunk = {key: groups[key] for key in keys[start : start + FOLD_CHUNK]}
            replayed.extend(await self._finish_fold(tx, plan_fold(chunk, rows)))
        return replayed

    async def _finish_fold(self, tx: Tx, plan: FoldPlan) -> list[ResourceKey]:
        """Replay the keys that need it from their stored history and write every folded row."""
        histories = await self._load_histories(tx, plan.replay) if plan.replay else {}
        folded: list[ResourceRow] = []
        for key in plan.keys:
            row = project(histories[key]) if key in histories else plan.advanced.get(key)
            if row is not None:
                folded.append(row)
        if folded:
            await self._upsert_rows(tx, folded)
        return plan.replay
