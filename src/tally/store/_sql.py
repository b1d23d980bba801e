"""The SQL both backends share: every Store method written once against a small dialect seam.

A backend supplies transactions (``_tx``), the conversion of instants, JSON and
id lists to and from its column types, the time-bucket expression, how a
migration file is run, and its sync lock. Statements here use ``?``
placeholders; the PostgreSQL backend rewrites them. The ingest steps
(``_upsert_rows``, ``_lock_keys``) are seams too, and PostgreSQL writes a
whole batch its own way (``write_batch``), as arrays in pipeline mode.
"""

from __future__ import annotations

import json
import logging
import uuid
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

import orjson

from tally.core import (
    Event,
    ResourceKey,
    ResourceRow,
    StoredEvent,
    advance,
    as_utc,
    may_hold_wide_integer,
    needs_replay,
    project,
    sorted_events,
    utc_now,
)

from ._ids import is_uuid
from ._interface import (
    EVENT_GROUPS,
    RESOURCE_GROUPS,
    AuditEntry,
    AuditRecord,
    BatchOutcome,
    BatchWriter,
    Bucket,
    Conflict,
    DeadLetter,
    EventFilter,
    EventKey,
    MigrationError,
    Page,
    Project,
    RejectedEvent,
    RejectedKey,
    Relation,
    ResourceFilter,
    ResourceType,
    RuleViolation,
    SchemaStatus,
    SizeName,
    StoreError,
    SyncReceipts,
    SyncRow,
    SyncStatus,
    UsageScope,
)
from ._migrations import Migration, load_migrations
from ._seam import Tx
from ._sql_credentials import CredentialsSql
from ._stale_runs import fail_stale_sync_runs
from ._usage_sql import usage_histories

log = logging.getLogger(__name__)

EVENT_COLUMNS = (
    "event_id",
    "timestamp",
    "received_at",
    "event_type",
    "platform",
    "cloud",
    "resource_type",
    "resource_id",
    "project_id",
    "source",
    "payload",
)
ROW_COLUMNS = (
    "cloud",
    "resource_type",
    "resource_id",
    "platform",
    "project_id",
    "state",
    "size",
    "created_at",
    "deleted_at",
    "last_event_type",
    "last_event_at",
    "last_payload",
    "first_event_at",
    "last_received_at",
    "last_event_id",
)
_EVENT_SELECT = ", ".join(EVENT_COLUMNS)
_ROW_SELECT = ", ".join(ROW_COLUMNS)
# The columns a fold reads: last_payload is left out (NULL) because folding any event overwrites it, and it
# is the largest value of a row to send, parse and convert.
FOLD_ROW_COLUMNS = tuple("NULL" if c == "last_payload" else c for c in ROW_COLUMNS)
_KEY_CHUNK = 300
REBUILD_BATCH = 100
VIRTUAL = frozenset({"meta", "partner"})


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys: equal documents get equal text (the seed rollback compares it)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        # orjson refuses integers beyond 64 bits, which JSON allows.
        return json.dumps(value, sort_keys=True, separators=(",", ":"))


def loads_json(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse stored JSON: orjson, unless the text may hold an integer beyond 64 bits (orjson would make
    it a float; json keeps it exact)."""
    raw = data if type(data) is bytes else data.encode() if isinstance(data, str) else bytes(data)
    # The translate scan, not a regex: a page of 100 rows parses up to 200 documents.
    if may_hold_wide_integer(raw):
        return json.loads(raw)
    return orjson.loads(raw)


def key_order(key: ResourceKey) -> tuple[str, str, str]:
    return (key.cloud, key.resource_type, key.resource_id)


def _where(conditions: Iterable[tuple[str, Any]]) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    for clause, value in conditions:
        clauses.append(clause)
        if isinstance(value, tuple):
            params.extend(value)
        else:
            params.append(value)
    return (" AND ".join(clauses) if clauses else "TRUE"), params


def _key_params(keys: Sequence[ResourceKey]) -> list[str]:
    return [part for key in keys for part in key_order(key)]


def select_list(columns: Sequence[str], alias: str) -> str:
    """``columns`` qualified by the table alias (a ``NULL`` placeholder stays as it is)."""
    return ", ".join(c if c == "NULL" else f"{alias}.{c}" for c in columns)


def _by_key(columns: Sequence[str], table: str, count: int) -> str:
    # The keys, as a VALUES list, are joined: one index probe each. SQLite answers the row-value form
    # "(cloud, resource_type, resource_id) IN (VALUES ...)" by scanning the whole table instead.
    values = ", ".join("(?, ?, ?)" for _ in range(count))
    return (
        f"SELECT {select_list(columns, 't')} FROM (VALUES {values}) AS k JOIN {table} AS t "
        "ON t.cloud = k.column1 AND t.resource_type = k.column2 AND t.resource_id = k.column3"
    )


@lru_cache(maxsize=64)
def rows_by_key_sql(count: int) -> str:
    """The fold's columns of the projection rows of ``count`` keys (bound as cloud, type, id each)."""
    return _by_key(FOLD_ROW_COLUMNS, "current_resources", count)


@lru_cache(maxsize=64)
def _receipts_by_key_sql(count: int) -> str:
    # Only a correction's payload is sent: it is the one that names a sync run.
    values = ", ".join("(?, ?, ?)" for _ in range(count))
    return (
        "SELECT t.cloud, t.resource_type, t.resource_id, t.received_at, "
        "CASE WHEN t.source = 'reconciliation' THEN t.payload END "
        f"FROM (VALUES {values}) AS k JOIN events AS t "
        "ON t.cloud = k.column1 AND t.resource_type = k.column2 AND t.resource_id = k.column3"
    )


@lru_cache(maxsize=64)
def history_by_key_sql(count: int) -> str:
    """Every stored event of ``count`` keys (bound as cloud, type, id each)."""
    return _by_key(EVENT_COLUMNS, "events", count)


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
    """The plain batch of ``SqlStore.open_batch``: events are kept until ``finish`` writes them."""

    def __init__(self, store: SqlStore, tx: Tx, at: datetime) -> None:
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


class SqlStore(CredentialsSql, ABC):
    """Every Store method over the dialect seam; see the module docstring."""

    dialect: str

    def __init__(self) -> None:
        self._migrations: list[Migration] = load_migrations(self.dialect)

    # -- the dialect seam -----------------------------------------------------------------------------
    @abstractmethod
    def _tx(self) -> AbstractAsyncContextManager[Tx]:
        """A transaction that commits on a clean exit and rolls back on an exception."""

    @abstractmethod
    async def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one read-only statement, without a transaction of its own (one round trip;
        on SQLite no write lock). The hot reads of every request use it: tokens, size names, schemas."""

    @abstractmethod
    def ts(self, value: datetime) -> Any: ...

    @abstractmethod
    def from_ts(self, value: Any) -> datetime: ...

    @abstractmethod
    def js(self, value: Any) -> Any: ...

    @abstractmethod
    def from_js(self, value: Any) -> Any: ...

    @abstractmethod
    def id_list(self, ids: Sequence[str]) -> Any: ...

    @abstractmethod
    def from_id_list(self, value: Any) -> tuple[str, ...]: ...

    @abstractmethod
    def bucket_expr(self, interval: Bucket) -> str:
        """An SQL expression of the bucket start of ``timestamp``."""

    @abstractmethod
    def integrity_errors(self) -> tuple[type[BaseException], ...]: ...

    @abstractmethod
    async def _run_migration(self, migration: Migration, *, up: bool) -> None:
        """Run one part of a migration and record it in schema_migrations, in one transaction."""

    async def _applied_version(self) -> int:
        recs = await self._fetch("SELECT coalesce(max(version), 0) FROM schema_migrations")
        return int(recs[0][0]) if recs else 0

    def opt_ts(self, value: datetime | None) -> Any:
        return None if value is None else self.ts(value)

    def from_opt_ts(self, value: Any) -> datetime | None:
        return None if value is None else self.from_ts(value)

    # -- schema --------------------------------------------------------------------------------------
    @property
    def latest_version(self) -> int:
        return self._migrations[-1].version if self._migrations else 0

    async def schema_status(self) -> SchemaStatus:
        return SchemaStatus(current=await self._applied_version(), latest=self.latest_version)

    async def migrate_up(self) -> list[int]:
        current = await self._applied_version()
        applied: list[int] = []
        for migration in self._migrations:
            if migration.version <= current:
                continue
            await self._run_migration(migration, up=True)
            log.info(
                "migration applied dialect=%s version=%d name=%s",
                self.dialect,
                migration.version,
                migration.name,
            )
            applied.append(migration.version)
        return applied

    async def migrate_down(self, target: int) -> list[int]:
        if target < 0 or target > self.latest_version:
            raise MigrationError(
                f"no migration version {target} to roll back to (latest is {self.latest_version})"
            )
        current = await self._applied_version()
        undone: list[int] = []
        for migration in reversed(self._migrations):
            if migration.version <= target or migration.version > current:
                continue
            await self._run_migration(migration, up=False)
            log.info(
                "migration rolled back dialect=%s version=%d name=%s",
                self.dialect,
                migration.version,
                migration.name,
            )
            undone.append(migration.version)
        return undone

    # -- conversions ----------------------------------------------------------------------------------
    def _event_params(self, event: Event, received_at: datetime) -> tuple[Any, ...]:
        return (
            event.event_id,
            self.ts(event.timestamp),
            self.ts(received_at),
            event.event_type,
            event.platform,
            event.cloud,
            event.resource_type,
            event.resource_id,
            event.project_id,
            event.source,
            self.js(dict(event.payload)),
        )

    def _stored(self, rec: Sequence[Any]) -> StoredEvent:
        event = Event(
            event_id=rec[0],
            timestamp=self.from_ts(rec[1]),
            event_type=rec[3],
            platform=rec[4],
            cloud=rec[5],
            resource_type=rec[6],
            resource_id=rec[7],
            project_id=rec[8],
            source=rec[9],
            payload=self.from_js(rec[10]),
        )
        return StoredEvent(event, self.from_ts(rec[2]))

    def _row_params(self, row: ResourceRow) -> tuple[Any, ...]:
        return (
            row.key.cloud,
            row.key.resource_type,
            row.key.resource_id,
            row.platform,
            row.project_id,
            row.state,
            self.js(dict(row.size)),
            self.opt_ts(row.created_at),
            self.opt_ts(row.deleted_at),
            row.last_event_type,
            self.ts(row.last_event_at),
            self.js(dict(row.last_payload)),
            self.ts(row.first_event_at),
            self.ts(row.last_received_at),
            row.last_event_id,
        )

    def _row(self, rec: Sequence[Any]) -> ResourceRow:
        last_payload = self.from_js(rec[11]) if rec[11] is not None else {}
        return ResourceRow(
            key=ResourceKey(rec[0], rec[1], rec[2]),
            platform=rec[3],
            project_id=rec[4],
            state=rec[5],
            size=self.from_js(rec[6]),
            created_at=self.from_opt_ts(rec[7]),
            deleted_at=self.from_opt_ts(rec[8]),
            last_event_type=rec[9],
            last_event_at=self.from_ts(rec[10]),
            last_payload=last_payload,
            first_event_at=self.from_ts(rec[12]),
            last_received_at=self.from_ts(rec[13]),
            last_event_id=rec[14],
        )

    # -- ingest ---------------------------------------------------------------------------------------
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

    async def _write_extras(
        self, tx: Tx, dead_letters: Sequence[DeadLetter], audits: Sequence[AuditEntry], at: datetime
    ) -> None:
        """The dead letters and audit rows of a batch, in the batch's transaction."""
        if dead_letters:
            await tx.executemany(
                "INSERT INTO rejected_events (id, received_at, reason, raw) VALUES (?, ?, ?, ?)",
                [(str(uuid.uuid4()), self.ts(at), d.reason, self.js(d.raw)) for d in dead_letters],
            )
        if audits:
            await self._write_audits(tx, audits, at)

    async def _insert_events(self, tx: Tx, events: Sequence[Event], received_at: datetime) -> list[Event]:
        """Insert the events that are not stored yet; return those (the others are duplicates)."""
        stored: set[tuple[str, datetime]] = set()
        ids = sorted({e.event_id for e in events})
        for start in range(0, len(ids), _KEY_CHUNK):
            chunk = ids[start : start + _KEY_CHUNK]
            marks = ", ".join("?" for _ in chunk)
            for rec in await tx.fetchall(
                f"SELECT event_id, timestamp FROM events WHERE event_id IN ({marks})", chunk
            ):
                stored.add((rec[0], self.from_ts(rec[1])))
        fresh = [e for e in events if (e.event_id, e.timestamp) not in stored]
        if fresh:
            marks = ", ".join("?" for _ in EVENT_COLUMNS)
            await tx.executemany(
                f"INSERT INTO events ({_EVENT_SELECT}) VALUES ({marks}) ON CONFLICT DO NOTHING",
                [self._event_params(e, received_at) for e in fresh],
            )
        return fresh

    @abstractmethod
    async def _lock_keys(self, tx: Tx, keys: Sequence[ResourceKey]) -> None:
        """Serialise projection writers of the same keys until the transaction ends."""

    async def _load_rows(self, tx: Tx, keys: Sequence[ResourceKey]) -> dict[ResourceKey, ResourceRow]:
        rows: dict[ResourceKey, ResourceRow] = {}
        for start in range(0, len(keys), _KEY_CHUNK):
            chunk = keys[start : start + _KEY_CHUNK]
            for rec in await tx.fetchall(rows_by_key_sql(len(chunk)), _key_params(chunk)):
                row = self._row(rec)
                rows[row.key] = row
        return rows

    async def _load_histories(
        self, tx: Tx, keys: Sequence[ResourceKey]
    ) -> dict[ResourceKey, list[StoredEvent]]:
        histories: dict[ResourceKey, list[StoredEvent]] = defaultdict(list)
        for start in range(0, len(keys), REBUILD_BATCH):
            chunk = keys[start : start + REBUILD_BATCH]
            for rec in await tx.fetchall(history_by_key_sql(len(chunk)), _key_params(chunk)):
                stored = self._stored(rec)
                histories[stored.event.key].append(stored)
        return histories

    async def _upsert_rows(self, tx: Tx, rows: Sequence[ResourceRow]) -> None:
        marks = ", ".join("?" for _ in ROW_COLUMNS)
        updates = ", ".join(f"{c} = excluded.{c}" for c in ROW_COLUMNS[3:])
        await tx.executemany(
            f"INSERT INTO current_resources ({_ROW_SELECT}) VALUES ({marks}) "
            f"ON CONFLICT (cloud, resource_type, resource_id) DO UPDATE SET {updates}",
            [self._row_params(r) for r in rows],
        )

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

    async def size_names(self, cloud: str) -> list[SizeName]:
        recs = await self._fetch(
            "SELECT cloud, resource_type, member, value, name FROM size_names WHERE cloud = ? "
            "ORDER BY resource_type, member, value",
            (cloud,),
        )
        return [SizeName(*rec) for rec in recs]

    async def replace_size_names(self, cloud: str, rows: Sequence[SizeName]) -> None:
        for row in rows:
            if row.cloud != cloud:
                raise RuleViolation(
                    f"size name row of cloud {row.cloud!r} given to replace those of {cloud!r}"
                )
        async with self._tx() as tx:
            await tx.execute("DELETE FROM size_names WHERE cloud = ?", (cloud,))
            if rows:
                await tx.executemany(
                    "INSERT INTO size_names (cloud, resource_type, member, value, name) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (cloud, resource_type, member, value) "
                    "DO UPDATE SET name = excluded.name",
                    [(r.cloud, r.resource_type, r.member, r.value, r.name) for r in rows],
                )

    # -- resource types -------------------------------------------------------------------------------
    def _resource_type(self, rec: Sequence[Any]) -> ResourceType:
        return ResourceType(rec[0], rec[1], self.from_js(rec[2]), self.from_ts(rec[3]))

    async def get_resource_type(self, platform: str, resource_type: str) -> ResourceType | None:
        recs = await self._fetch(
            "SELECT platform, resource_type, size_schema, updated_at FROM resource_types "
            "WHERE platform = ? AND resource_type = ?",
            (platform, resource_type),
        )
        return self._resource_type(recs[0]) if recs else None

    async def list_resource_types(self) -> list[ResourceType]:
        async with self._tx() as tx:
            recs = await tx.fetchall(
                "SELECT platform, resource_type, size_schema, updated_at FROM resource_types "
                "ORDER BY platform, resource_type"
            )
        return [self._resource_type(r) for r in recs]

    async def put_resource_type(
        self, platform: str, resource_type: str, size_schema: Mapping[str, Any]
    ) -> ResourceType:
        now = utc_now()
        async with self._tx() as tx:
            await tx.execute(
                "INSERT INTO resource_types (platform, resource_type, size_schema, updated_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (platform, resource_type) "
                "DO UPDATE SET size_schema = excluded.size_schema, "
                "updated_at = excluded.updated_at",
                (platform, resource_type, self.js(dict(size_schema)), self.ts(now)),
            )
        return ResourceType(platform, resource_type, dict(size_schema), now)

    # -- events ---------------------------------------------------------------------------------------
    def _event_conditions(self, f: EventFilter) -> list[tuple[str, Any]]:
        conds: list[tuple[str, Any]] = [
            (f"{col} = ?", getattr(f, col))
            for col in ("cloud", "platform", "project_id", "resource_type", "event_type", "source")
            if getattr(f, col) is not None
        ]
        if f.start is not None:
            conds.append(("timestamp >= ?", self.ts(f.start)))
        if f.end is not None:
            conds.append(("timestamp < ?", self.ts(f.end)))
        return conds

    def events_page_sql(
        self, filters: EventFilter, limit: int, after: EventKey | None, select: str = _EVENT_SELECT
    ) -> tuple[str, list[Any]]:
        """The statement of a page of ``limit + 1`` events (the extra row tells a next page exists)."""
        conds = self._event_conditions(filters)
        if after is not None:
            conds.append(("(timestamp, event_id) > (?, ?)", (self.ts(after[0]), after[1])))
        where, params = _where(conds)
        sql = f"SELECT {select} FROM events WHERE {where} ORDER BY timestamp, event_id LIMIT ?"
        return sql, [*params, limit + 1]

    async def list_events(
        self, filters: EventFilter, *, limit: int = 100, after: EventKey | None = None
    ) -> Page[StoredEvent, EventKey]:
        # One statement sees one snapshot: no transaction (on PostgreSQL a BEGIN and a COMMIT, two more
        # round trips per page).
        recs = await self._fetch(*self.events_page_sql(filters, limit, after))
        items = [self._stored(r) for r in recs[:limit]]
        next_key = (items[-1].event.timestamp, items[-1].event.event_id) if len(recs) > limit else None
        return Page(items, next_key)

    async def list_events_json(
        self, filters: EventFilter, *, limit: int = 100, after: EventKey | None = None
    ) -> Page[dict[str, Any], EventKey]:
        page = await self.list_events(filters, limit=limit, after=after)
        return Page([stored.to_wire() for stored in page.items], page.next_key)

    async def resource_history(self, key: ResourceKey, *, limit: int | None = None) -> list[StoredEvent]:
        params: list[Any] = list(key_order(key))
        sql = (
            f"SELECT {_EVENT_SELECT} FROM events WHERE cloud = ? AND resource_type = ? AND resource_id = ? "
            "ORDER BY timestamp, received_at, event_id"
        )
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        async with self._tx() as tx:
            recs = await tx.fetchall(sql, params)
        return [self._stored(r) for r in recs]

    async def lifecycle_events(self, key: ResourceKey) -> list[StoredEvent]:
        return await self.resource_history(key)

    async def histories(self, keys: Sequence[ResourceKey]) -> dict[ResourceKey, list[StoredEvent]]:
        ordered = sorted(set(keys), key=key_order)
        async with self._tx() as tx:
            loaded = await self._load_histories(tx, ordered)
        return {key: sorted_events(loaded[key]) for key in ordered if key in loaded}

    async def event_stats(
        self,
        group_by: Sequence[str],
        *,
        start: datetime,
        end: datetime,
        interval: Bucket,
        filters: EventFilter = EventFilter(),
    ) -> list[dict[str, Any]]:
        columns = _group_columns(group_by, EVENT_GROUPS)
        conds = self._event_conditions(filters)
        conds += [("timestamp >= ?", self.ts(start)), ("timestamp < ?", self.ts(end))]
        where, params = _where(conds)
        select = ", ".join(["bucket", *columns])
        inner = ", ".join([f"{self.bucket_expr(interval)} AS bucket", *columns])
        async with self._tx() as tx:
            recs = await tx.fetchall(
                f"SELECT {select}, count(*) FROM (SELECT {inner} FROM events WHERE {where}) AS b "
                f"GROUP BY {select} ORDER BY {select}",
                params,
            )
        out: list[dict[str, Any]] = []
        for rec in recs:
            item: dict[str, Any] = {"bucket": self.from_ts(rec[0])}
            item.update(zip(columns, rec[1:-1], strict=True))
            item["count"] = int(rec[-1])
            out.append(item)
        return out

    async def usage_histories(
        self, scope: UsageScope, *, limit: int = 500, after: ResourceKey | None = None
    ) -> Page[tuple[ResourceKey, list[StoredEvent]], ResourceKey]:
        return await usage_histories(self, scope, limit=limit, after=after)

    # -- resources ------------------------------------------------------------------------------------
    def _resource_conditions(self, f: ResourceFilter) -> list[tuple[str, Any]]:
        conds: list[tuple[str, Any]] = [
            (f"{col} = ?", getattr(f, col))
            for col in ("cloud", "platform", "project_id", "resource_type", "state")
            if getattr(f, col) is not None
        ]
        if f.status == "active":
            conds.append(("deleted_at IS NULL", ()))
        elif f.status == "deleted":
            conds.append(("deleted_at IS NOT NULL", ()))
        return conds

    async def get_resource(self, key: ResourceKey) -> ResourceRow | None:
        async with self._tx() as tx:
            recs = await tx.fetchall(
                f"SELECT {_ROW_SELECT} FROM current_resources "
                "WHERE cloud = ? AND resource_type = ? AND resource_id = ?",
                key_order(key),
            )
        return self._row(recs[0]) if recs else None

    def resources_page_sql(
        self, filters: ResourceFilter, limit: int, after: ResourceKey | None, select: str = _ROW_SELECT
    ) -> tuple[str, list[Any]]:
        """The statement of a page of ``limit + 1`` projection rows."""
        conds = self._resource_conditions(filters)
        if after is not None:
            conds.append(("(cloud, resource_type, resource_id) > (?, ?, ?)", key_order(after)))
        where, params = _where(conds)
        sql = (
            f"SELECT {select} FROM current_resources WHERE {where} "
            "ORDER BY cloud, resource_type, resource_id LIMIT ?"
        )
        return sql, [*params, limit + 1]

    async def list_resources(
        self, filters: ResourceFilter, *, limit: int = 100, after: ResourceKey | None = None
    ) -> Page[ResourceRow, ResourceKey]:
        # One statement, no transaction: see list_events.
        recs = await self._fetch(*self.resources_page_sql(filters, limit, after))
        items = [self._row(r) for r in recs[:limit]]
        return Page(items, items[-1].key if len(recs) > limit else None)

    async def list_resources_json(
        self, filters: ResourceFilter, *, limit: int = 100, after: ResourceKey | None = None
    ) -> Page[dict[str, Any], ResourceKey]:
        page = await self.list_resources(filters, limit=limit, after=after)
        return Page([row.to_wire() for row in page.items], page.next_key)

    async def resource_stats(
        self, group_by: Sequence[str], *, filters: ResourceFilter = ResourceFilter()
    ) -> list[dict[str, Any]]:
        columns = _group_columns(group_by, RESOURCE_GROUPS)
        where, params = _where(self._resource_conditions(filters))
        select = ", ".join(columns)
        async with self._tx() as tx:
            recs = await tx.fetchall(
                f"SELECT {select}, count(*) FROM current_resources WHERE {where} "
                f"GROUP BY {select} ORDER BY {select}",
                params,
            )
        return [{**dict(zip(columns, rec[:-1], strict=True)), "count": int(rec[-1])} for rec in recs]

    async def resources_of_cloud(self, cloud: str) -> list[ResourceRow]:
        async with self._tx() as tx:
            recs = await tx.fetchall(
                f"SELECT {_ROW_SELECT} FROM current_resources WHERE cloud = ? "
                "ORDER BY resource_type, resource_id",
                (cloud,),
            )
        return [self._row(r) for r in recs]

    # -- the sync's read of the projection (read side only; tally.reconcile's diff) --------------------
    async def sync_rows(self, cloud: str, resource_type: str) -> list[SyncRow]:
        # Only the columns the diff compares, one type at a time: a 250,000-row cloud read whole, payloads
        # and all, cost the sync most of its memory. Sizes come as text on both backends so that equal
        # sizes (a flavor's, a volume type's) parse once and share one mapping; names are shared likewise.
        async with self._tx() as tx:
            recs = await tx.fetchall(
                "SELECT resource_id, project_id, state, "
                "CASE WHEN deleted_at IS NULL THEN CAST(size AS TEXT) END, last_event_at, "
                "CASE WHEN deleted_at IS NULL THEN 1 ELSE 0 END, created_at, first_event_at "
                "FROM current_resources WHERE cloud = ? AND resource_type = ? ORDER BY resource_id",
                (cloud, resource_type),
            )
        sizes: dict[str, Mapping[str, Any]] = {}
        names: dict[str, str] = {}
        rows: list[SyncRow] = []
        for resource_id, project_id, state, size_text, last_event_at, live, created_at, first_at in recs:
            size = None
            if size_text is not None:
                size = sizes.get(size_text)
                if size is None:
                    size = sizes[size_text] = loads_json(size_text)
            rows.append(
                SyncRow(
                    resource_type,
                    resource_id,
                    names.setdefault(project_id, project_id),
                    names.setdefault(state, state),
                    size,
                    self.from_ts(last_event_at),
                    bool(live),
                    self.from_opt_ts(created_at),
                    self.from_ts(first_at),
                )
            )
        return rows

    async def current_resource_counts(self) -> list[tuple[str, str, str, str, int]]:
        async with self._tx() as tx:
            recs = await tx.fetchall(
                "SELECT platform, cloud, resource_type, state, count(*) FROM current_resources "
                "GROUP BY platform, cloud, resource_type, state "
                "ORDER BY platform, cloud, resource_type, state"
            )
        return [(r[0], r[1], r[2], r[3], int(r[4])) for r in recs]

    async def rebuild_projection(self, *, cloud: str | None = None, resource_type: str | None = None) -> int:
        conds = [
            (f"{c} = ?", v) for c, v in (("cloud", cloud), ("resource_type", resource_type)) if v is not None
        ]
        where, params = _where(conds)
        async with self._tx() as tx:
            recs = await tx.fetchall(
                f"SELECT DISTINCT cloud, resource_type, resource_id FROM events WHERE {where} "
                "ORDER BY cloud, resource_type, resource_id",
                params,
            )
        keys = [ResourceKey(*r) for r in recs]
        for start in range(0, len(keys), REBUILD_BATCH):
            batch = keys[start : start + REBUILD_BATCH]
            async with self._tx() as tx:
                await self._lock_keys(tx, batch)
                histories = await self._load_histories(tx, batch)
                rows = [row for key in batch if (row := project(histories.get(key, []))) is not None]
                await self._upsert_rows(tx, rows)
        log.info("projection rebuilt keys=%d cloud=%s resource_type=%s", len(keys), cloud, resource_type)
        return len(keys)

    # -- projects and relations -----------------------------------------------------------------------
    _PROJECT_SELECT = "SELECT id, platform, cloud, external_id, name, metadata, created_at FROM projects"
    _RELATION_SELECT = (
        "SELECT id, source_id, target_id, relation_type, metadata, valid_from, valid_to, created_at "
        "FROM project_relations"
    )

    def _project(self, rec: Sequence[Any]) -> Project:
        return Project(
            str(rec[0]), rec[1], rec[2], rec[3], rec[4], self.from_js(rec[5]), self.from_ts(rec[6])
        )

    def _relation(self, rec: Sequence[Any]) -> Relation:
        return Relation(
            str(rec[0]),
            str(rec[1]),
            str(rec[2]),
            rec[3],
            self.from_js(rec[4]),
            self.from_ts(rec[5]),
            self.from_opt_ts(rec[6]),
            self.from_ts(rec[7]),
        )

    async def create_project(
        self,
        *,
        platform: str,
        cloud: str,
        external_id: str,
        name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Project:
        if platform != cloud and (platform in VIRTUAL or cloud in VIRTUAL):
            raise RuleViolation(
                f"project platform {platform!r} and cloud {cloud!r}: a virtual platform (meta, partner) "
                "needs platform = cloud"
            )
        project_id = str(uuid.uuid4())
        now = utc_now()
        meta = dict(metadata or {})
        try:
            async with self._tx() as tx:
                if await tx.fetchall(
                    "SELECT 1 FROM projects WHERE cloud = ? AND external_id = ?", (cloud, external_id)
                ):
                    raise Conflict(f"a project with cloud {cloud!r} and external_id {external_id!r} exists")
                await tx.execute(
                    "INSERT INTO projects (id, platform, cloud, external_id, name, metadata, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (project_id, platform, cloud, external_id, name, self.js(meta), self.ts(now)),
                )
        except self.integrity_errors() as exc:
            raise Conflict(f"a project with cloud {cloud!r} and external_id {external_id!r} exists") from exc
        return Project(project_id, platform, cloud, external_id, name, meta, now)

    async def get_project(self, project_id: str) -> Project | None:
        if not is_uuid(project_id):
            return None
        async with self._tx() as tx:
            recs = await tx.fetchall(f"{self._PROJECT_SELECT} WHERE id = ?", (project_id,))
        return self._project(recs[0]) if recs else None

    async def find_project(self, cloud: str, external_id: str) -> Project | None:
        async with self._tx() as tx:
            recs = await tx.fetchall(
                f"{self._PROJECT_SELECT} WHERE cloud = ? AND external_id = ?", (cloud, external_id)
            )
        return self._project(recs[0]) if recs else None

    async def list_projects(
        self,
        *,
        platform: str | None = None,
        cloud: str | None = None,
        limit: int = 100,
        after: str | None = None,
    ) -> Page[Project, str]:
        conds = [(f"{c} = ?", v) for c, v in (("platform", platform), ("cloud", cloud)) if v is not None]
        if after is not None:
            if not is_uuid(after):
                raise RuleViolation(f"project cursor {after!r} is not a project id")
            conds.append(("id > ?", after))
        where, params = _where(conds)
        async with self._tx() as tx:
            recs = await tx.fetchall(
                f"{self._PROJECT_SELECT} WHERE {where} ORDER BY id LIMIT ?", [*params, limit + 1]
            )
        items = [self._project(r) for r in recs[:limit]]
        return Page(items, items[-1].id if len(recs) > limit else None)

    async def update_project(
        self, project_id: str, *, name: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Project | None:
        if not is_uuid(project_id):
            return None
        sets: list[tuple[str, Any]] = []
        if name is not None:
            sets.append(("name = ?", name))
        if metadata is not None:
            sets.append(("metadata = ?", self.js(dict(metadata))))
        if sets:
            async with self._tx() as tx:
                await tx.execute(
                    f"UPDATE projects SET {', '.join(s for s, _ in sets)} WHERE id = ?",
                    [*(v for _, v in sets), project_id],
                )
        return await self.get_project(project_id)

    async def create_relation(
        self,
        *,
        source_id: str,
        target_id: str,
        relation_type: str,
        metadata: Mapping[str, Any] | None = None,
        valid_from: datetime | None = None,
    ) -> Relation:
        if source_id == target_id:
            raise RuleViolation("a relation needs two different projects (source_id equals target_id)")
        relation_id = str(uuid.uuid4())
        now = utc_now()
        start = as_utc(valid_from) if valid_from is not None else now
        meta = dict(metadata or {})
        conflict = f"an active {relation_type!r} relation from {source_id} to {target_id} exists"
        try:
            async with self._tx() as tx:
                for member, pid in (("source_id", source_id), ("target_id", target_id)):
                    if not is_uuid(pid) or not await tx.fetchall(
                        "SELECT 1 FROM projects WHERE id = ?", (pid,)
                    ):
                        raise RuleViolation(f"{member} {pid!r} names no project")
                if await tx.fetchall(
                    "SELECT 1 FROM project_relations WHERE source_id = ? AND target_id = ? "
                    "AND relation_type = ? AND valid_to IS NULL",
                    (source_id, target_id, relation_type),
                ):
                    raise Conflict(conflict)
                await tx.execute(
                    "INSERT INTO project_relations (id, source_id, target_id, relation_type, metadata, "
                    "valid_from, valid_to, created_at) VALUES (?, ?, ?, ?, ?, ?, NULL, ?)",
                    (
                        relation_id,
                        source_id,
                        target_id,
                        relation_type,
                        self.js(meta),
                        self.ts(start),
                        self.ts(now),
                    ),
                )
        except self.integrity_errors() as exc:
            raise Conflict(conflict) from exc
        return Relation(relation_id, source_id, target_id, relation_type, meta, start, None, now)

    async def get_relation(self, relation_id: str) -> Relation | None:
        if not is_uuid(relation_id):
            return None
        async with self._tx() as tx:
            recs = await tx.fetchall(f"{self._RELATION_SELECT} WHERE id = ?", (relation_id,))
        return self._relation(recs[0]) if recs else None

    def _valid_at(self, at: datetime | None) -> tuple[str, Any]:
        if at is None:
            return ("valid_to IS NULL", ())
        stamp = self.ts(at)
        return ("valid_from <= ? AND (valid_to IS NULL OR valid_to > ?)", (stamp, stamp))

    async def list_relations(self, project_id: str, *, at: datetime | None = None) -> list[Relation]:
        if not is_uuid(project_id):
            return []
        conds: list[tuple[str, Any]] = [("(source_id = ? OR target_id = ?)", (project_id, project_id))]
        if at is not None:
            conds.append(self._valid_at(at))
        where, params = _where(conds)
        async with self._tx() as tx:
            recs = await tx.fetchall(f"{self._RELATION_SELECT} WHERE {where} ORDER BY valid_from, id", params)
        return [self._relation(r) for r in recs]

    async def relations_at(
        self, at: datetime | None = None, *, relation_type: str | None = None
    ) -> list[Relation]:
        conds: list[tuple[str, Any]] = [self._valid_at(at)]
        if relation_type is not None:
            conds.append(("relation_type = ?", relation_type))
        where, params = _where(conds)
        async with self._tx() as tx:
            recs = await tx.fetchall(f"{self._RELATION_SELECT} WHERE {where} ORDER BY valid_from, id", params)
        return [self._relation(r) for r in recs]

    async def update_relation(
        self,
        relation_id: str,
        *,
        metadata: Mapping[str, Any] | None = None,
        valid_to: datetime | None = None,
    ) -> Relation | None:
        if not is_uuid(relation_id):
            return None
        sets: list[tuple[str, Any]] = []
        if metadata is not None:
            sets.append(("metadata = ?", self.js(dict(metadata))))
        if valid_to is not None:
            sets.append(("valid_to = ?", self.ts(valid_to)))
        if sets:
            async with self._tx() as tx:
                await tx.execute(
                    f"UPDATE project_relations SET {', '.join(s for s, _ in sets)} WHERE id = ?",
                    [*(v for _, v in sets), relation_id],
                )
        return await self.get_relation(relation_id)

    async def end_relation(self, relation_id: str, at: datetime | None = None) -> Relation | None:
        if not is_uuid(relation_id):
            return None
        async with self._tx() as tx:
            await tx.execute(
                "UPDATE project_relations SET valid_to = ? WHERE id = ? AND valid_to IS NULL",
                (self.ts(at if at is not None else utc_now()), relation_id),
            )
        return await self.get_relation(relation_id)

    # -- rejected events and audit -------------------------------------------------------------------
    async def list_rejected(
        self,
        *,
        start: datetime | None = None,
        end: datetime | None = None,
        limit: int = 100,
        after: RejectedKey | None = None,
    ) -> Page[RejectedEvent, RejectedKey]:
        conds: list[tuple[str, Any]] = []
        if start is not None:
            conds.append(("received_at >= ?", self.ts(start)))
        if end is not None:
            conds.append(("received_at < ?", self.ts(end)))
        if after is not None:
            if not is_uuid(after[1]):
                raise RuleViolation(f"rejected-event cursor id {after[1]!r} is not an id")
            conds.append(("(received_at, id) > (?, ?)", (self.ts(after[0]), after[1])))
        where, params = _where(conds)
        async with self._tx() as tx:
            recs = await tx.fetchall(
                f"SELECT id, received_at, reason, raw FROM rejected_events WHERE {where} "
                "ORDER BY received_at, id LIMIT ?",
                [*params, limit + 1],
            )
        items = [RejectedEvent(str(r[0]), self.from_ts(r[1]), r[2], self.from_js(r[3])) for r in recs[:limit]]
        return Page(items, (items[-1].received_at, items[-1].id) if len(recs) > limit else None)

    async def _write_audits(self, tx: Tx, entries: Sequence[AuditEntry], at: datetime) -> None:
        await tx.executemany(
            "INSERT INTO audit_log (at, actor, action, object_type, object_id, details) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [
                (self.ts(at), e.actor, e.action, e.object_type, e.object_id, self.js(dict(e.details)))
                for e in entries
            ],
        )

    async def audit(self, entry: AuditEntry) -> None:
        async with self._tx() as tx:
            await self._write_audits(tx, [entry], utc_now())

    async def list_audit(self, *, action: str | None = None, limit: int = 100) -> list[AuditRecord]:
        where, params = _where([("action = ?", action)] if action is not None else [])
        async with self._tx() as tx:
            recs = await tx.fetchall(
                f"SELECT id, at, actor, action, object_type, object_id, details FROM audit_log WHERE {where} "
                "ORDER BY id DESC LIMIT ?",
                [*params, limit],
            )
        return [
            AuditRecord(int(r[0]), self.from_ts(r[1]), r[2], r[3], r[4], r[5], self.from_js(r[6]))
            for r in recs
        ]

    # -- reconciliation -------------------------------------------------------------------------------
    async def start_sync_run(self, cloud: str, started_at: datetime | None = None) -> str:
        run_id = str(uuid.uuid4())
        async with self._tx() as tx:
            await tx.execute(
                "INSERT INTO sync_runs (id, cloud, started_at, status, stats) VALUES (?, ?, ?, 'running', ?)",
                (run_id, cloud, self.ts(started_at if started_at is not None else utc_now()), self.js({})),
            )
        return run_id

    async def finish_sync_run(
        self, run_id: str, status: SyncStatus, stats: Mapping[str, Any], completed_at: datetime | None = None
    ) -> None:
        if status not in ("completed", "failed", "running"):
            raise RuleViolation(f"sync run status {status!r} is not one of running, completed, failed")
        if not is_uuid(run_id):
            raise StoreError(f"no sync run {run_id!r}")
        async with self._tx() as tx:
            count = await tx.execute(
                "UPDATE sync_runs SET status = ?, stats = ?, completed_at = ? WHERE id = ?",
                (status, self.js(dict(stats)), self.ts(completed_at or utc_now()), run_id),
            )
        if count == 0:
            raise StoreError(f"no sync run {run_id!r}")

    async def last_completed_sync_started_at(self, cloud: str) -> datetime | None:
        async with self._tx() as tx:
            recs = await tx.fetchall(
                "SELECT max(started_at) FROM sync_runs WHERE cloud = ? AND status = 'completed'", (cloud,)
            )
        return self.from_opt_ts(recs[0][0]) if recs else None

    async def fail_stale_sync_runs(self, cloud: str, at: datetime | None = None) -> list[str]:
        return await fail_stale_sync_runs(self, cloud, at if at is not None else utc_now())

    async def get_sync_run(self, run_id: str) -> dict[str, Any] | None:
        if not is_uuid(run_id):
            return None
        async with self._tx() as tx:
            recs = await tx.fetchall(f"SELECT {_SYNC_RUN_COLUMNS} FROM sync_runs WHERE id = ?", (run_id,))
        return self._sync_run(recs[0]) if recs else None

    async def list_sync_runs(self, cloud: str) -> list[dict[str, Any]]:
        async with self._tx() as tx:
            recs = await tx.fetchall(
                f"SELECT {_SYNC_RUN_COLUMNS} FROM sync_runs WHERE cloud = ? "
                "ORDER BY started_at, completed_at NULLS LAST",
                (cloud,),
            )
        return [self._sync_run(r) for r in recs]

    async def sync_runs_between(
        self, cloud: str, after: datetime, before: datetime, *, limit: int | None = None
    ) -> list[dict[str, Any]]:
        params: list[Any] = [cloud, self.ts(after), self.ts(before)]
        if limit is not None:
            params.append(limit)
        async with self._tx() as tx:
            recs = await tx.fetchall(
                f"SELECT {_SYNC_RUN_COLUMNS} FROM sync_runs WHERE cloud = ? AND started_at > ? "
                "AND started_at < ? ORDER BY started_at, completed_at NULLS LAST"
                + (" LIMIT ?" if limit is not None else ""),
                params,
            )
        return [self._sync_run(r) for r in recs]

    async def newest_receipt(self) -> datetime | None:
        # Over every cloud rather than one: events_received_idx answers it with one probe, and a newer
        # receipt only makes a reader assume a run held more rows than it did.
        async with self._tx() as tx:
            recs = await tx.fetchall("SELECT max(received_at) FROM events")
        return self.from_opt_ts(recs[0][0]) if recs else None

    async def sync_receipts(self, keys: Sequence[ResourceKey]) -> dict[ResourceKey, SyncReceipts]:
        first: dict[ResourceKey, datetime] = {}
        runs: defaultdict[ResourceKey, set[str]] = defaultdict(set)
        ordered = sorted(set(keys), key=key_order)
        async with self._tx() as tx:
            for start in range(0, len(ordered), _KEY_CHUNK):
                chunk = ordered[start : start + _KEY_CHUNK]
                recs = await tx.fetchall(_receipts_by_key_sql(len(chunk)), _key_params(chunk))
                for cloud, resource_type, resource_id, received_at, payload in recs:
                    key = ResourceKey(cloud, resource_type, resource_id)
                    at = self.from_ts(received_at)
                    if key not in first or at < first[key]:
                        first[key] = at
                    provider = self.from_js(payload).get("provider") if payload is not None else None
                    if isinstance(provider, Mapping) and isinstance(provider.get("sync_run_id"), str):
                        runs[key].add(provider["sync_run_id"])
        return {key: SyncReceipts(at, frozenset(runs.get(key, ()))) for key, at in first.items()}

    async def late_keys(
        self,
        cloud: str,
        received_after: datetime,
        dated_before: datetime,
        *,
        except_types: Sequence[str] = (),
    ) -> list[ResourceKey]:
        # events_received_idx bounds the scan to what arrived since ``received_after``.
        excluded = sorted(set(except_types))
        not_in = f" AND event_type NOT IN ({', '.join('?' for _ in excluded)})" if excluded else ""
        async with self._tx() as tx:
            recs = await tx.fetchall(
                "SELECT DISTINCT resource_type, resource_id FROM events WHERE received_at > ? "
                f"AND cloud = ? AND timestamp < ?{not_in} ORDER BY resource_type, resource_id",
                [self.ts(received_after), cloud, self.ts(dated_before), *excluded],
            )
        return [ResourceKey(cloud, t, i) for t, i in recs]

    def _sync_run(self, r: Sequence[Any]) -> dict[str, Any]:
        return {
            "id": str(r[0]),
            "cloud": r[1],
            "started_at": self.from_ts(r[2]),
            "completed_at": self.from_opt_ts(r[3]),
            "status": r[4],
            "stats": self.from_js(r[5]),
        }


_SYNC_RUN_COLUMNS = "id, cloud, started_at, completed_at, status, stats"


def _group_columns(group_by: Sequence[str], allowed: frozenset[str]) -> list[str]:
    """The group columns, validated against a fixed set (they are spliced into SQL)."""
    columns: list[str] = []
    for name in group_by:
        if name not in allowed:
            raise RuleViolation(f"cannot group by {name!r}; allowed: {', '.join(sorted(allowed))}")
        if name not in columns:
            columns.append(name)
    if not columns:
        raise RuleViolation("group_by needs at least one column")
    return columns
