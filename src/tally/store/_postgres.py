"""The PostgreSQL backend (psycopg 3 async, psycopg_pool): production, shared by every replica.

The hot ingest steps send a whole batch as arrays: one ``INSERT ... SELECT FROM
unnest(...) ON CONFLICT DO NOTHING RETURNING`` for the events, one statement
that takes the per-key transaction advisory locks, one that reads the rows,
one upsert of the folded rows. The fold itself runs in Python with the pure
core functions.

The sync lock of a cloud is a session advisory lock on a connection of its own
(``_pg_sync_lock``).
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime
from functools import lru_cache
from typing import Any

import orjson
import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.json import Jsonb, set_json_loads
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from tally.core import Event, ResourceKey, ResourceRow, StoredEvent, as_utc, utc_now

from ._interface import (
    AuditEntry,
    BatchOutcome,
    BatchWriter,
    Bucket,
    DeadLetter,
    EventFilter,
    EventKey,
    MigrationError,
    Page,
    ResourceFilter,
    StoreError,
)
from ._migrations import Migration
from ._page_windows import PartitionMonths, read_events_page
from ._pg_pages import EVENT_JSON_SELECT, ROW_JSON_SELECT, RawJsonb, events_json_page, resources_json_page
from ._pg_sync_lock import hold_sync_lock
from ._pool_wait import pooled_connection
from ._read_only import MAX_LIFETIME_S, ReadOnlyHealer
from ._seam import Tx
from ._sql import SqlStore
from ._sql_ingest import plan_fold
from ._sql_text import FOLD_ROW_COLUMNS, ROW_COLUMNS, canonical_json, key_order, loads_json, select_list
from ._usage_sql import UsageReads

_MIGRATION_LOCK = 0x7A11_0001

# psycopg_pool retries a connection it could not make after 1 s, doubling the delay up to its
# reconnect_timeout (5 minutes by default): after a 30 s outage the next attempt came up to 30 s after
# the server was back (measured: 27.5 s; 0.8 s with this). So each attempt gives up
# after a few seconds and ``_reconnect_again`` starts a new one at once: during an outage the pool
# tries at 0, 1, 3 and 5 s, over and over, and is back within about 2 s of the server.
RECONNECT_TIMEOUT_S = 5.0


async def _reconnect_again(pool: AsyncConnectionPool[Any]) -> None:
    """The pool's ``reconnect_failed``: an attempt gave up, so start another (``check`` grows a pool
    below its size); otherwise the pool would wait for a request to try again."""
    if not pool.closed:
        await pool.check()


@lru_cache(maxsize=512)
def _pg(sql: str) -> str:
    return sql.replace("%", "%%").replace("?", "%s")


class _PgTx:
    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self.conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        cursor = await self.conn.execute(_pg(sql), list(params))
        return int(cursor.rowcount)

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        async with self.conn.cursor() as cursor:
            await cursor.executemany(_pg(sql), [list(r) for r in rows])

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cursor = await self.conn.execute(_pg(sql), list(params))
        return [tuple(r) for r in await cursor.fetchall()]

    @asynccontextmanager
    async def stream(
        self, sql: str, params: Sequence[Any], *, size: int
    ) -> AsyncIterator[AsyncIterator[list[tuple[Any, ...]]]]:
        # A server-side cursor (DECLARE ... FETCH), closed on the way out whatever ends the reading.
        async with self.conn.cursor(name="tally_stream") as cursor:
            await cursor.execute(_pg(sql), list(params))
            yield _fetched(cursor, size)


async def _fetched(cursor: psycopg.AsyncServerCursor[Any], size: int) -> AsyncIterator[list[tuple[Any, ...]]]:
    while rows := await cursor.fetchmany(size):
        yield rows


# Batches travel as arrays, one per column, expanded by unnest(): one statement per step. The array
# literals are built here with str methods (C speed); psycopg's own list dumpers work element by element in
# Python and cost more than the statement.
_INSERT_EVENTS = """
INSERT INTO events (event_id, timestamp, received_at, event_type, platform, cloud, resource_type, resource_id,
                    project_id, source, payload)
SELECT e.i, e.t, %s::timestamptz, e.y, e.p, e.c, e.r, e.d, e.o, e.s, e.l::jsonb
FROM unnest(%s::text[], %s::timestamptz[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[],
            %s::text[], %s::text[], %s::text[]) AS e(i, t, y, p, c, r, d, o, s, l)
ON CONFLICT DO NOTHING
RETURNING event_id, timestamp
"""

_LOCK_KEYS = """
SELECT pg_advisory_xact_lock(h)
FROM (SELECT DISTINCT hashtextextended(k, 0) AS h FROM unnest(%s::text[]) AS k) AS s
ORDER BY h
"""

# One index probe per key. A plain LATERAL subquery is flattened into a join, and the planner then
# hashes the whole table (a sequential scan per batch, growing with the cloud); LIMIT 1 keeps the
# subquery a per-key probe of the primary key, and cuts nothing since the key is unique.
_LOAD_ROWS = f"""
SELECT {select_list(FOLD_ROW_COLUMNS, "c")}
FROM unnest(%s::text[], %s::text[], %s::text[]) AS k(cloud, resource_type, resource_id)
CROSS JOIN LATERAL (
    SELECT * FROM current_resources AS cr
    WHERE cr.cloud = k.cloud AND cr.resource_type = k.resource_type AND cr.resource_id = k.resource_id
    LIMIT 1
) AS c
"""

_ROW_TYPES = (
    "text",
    "text",
    "text",
    "text",
    "text",
    "text",
    "jsonb",
    "timestamptz",
    "timestamptz",
    "text",
    "timestamptz",
    "jsonb",
    "timestamptz",
    "timestamptz",
    "text",
)
_UPSERT_ROWS = f"""
INSERT INTO current_resources ({", ".join(ROW_COLUMNS)})
SELECT {", ".join(f"r.{c}::{t}" for c, t in zip(ROW_COLUMNS, _ROW_TYPES, strict=True))}
FROM unnest({", ".join("%s::timestamptz[]" if t == "timestamptz" else "%s::text[]" for t in _ROW_TYPES)})
     AS r({", ".join(ROW_COLUMNS)})
ON CONFLICT (cloud, resource_type, resource_id) DO UPDATE SET
{", ".join(f"{c} = EXCLUDED.{c}" for c in ROW_COLUMNS[3:])}
"""


def _json_param(value: Any) -> str:
    """A JSON value as text (cast to jsonb by the statement)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        # orjson refuses integers beyond 64 bits, which JSON allows.
        return json.dumps(value, separators=(",", ":"))


def describe_url(url: str) -> str:
    """host:port/dbname of a URL, never its password."""
    try:
        info = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "(an unparsable URL)"
    return f"{info.get('host', 'localhost')}:{info.get('port', 5432)}/{info.get('dbname', '')}"


def _text_array(values: Sequence[str | None]) -> str:
    """A PostgreSQL array literal of texts (NULL for None). A text can hold no NUL (events refuse it and
    PostgreSQL cannot store it), so NUL separates the elements while the escaping runs once over all."""
    if not values:
        return "{}"
    if None in values:
        return "{" + ",".join("NULL" if v is None else _text_array([v])[1:-1] for v in values) + "}"
    body = "\x00".join(values)  # type: ignore[arg-type]
    if '"' in body or "\\" in body:
        body = body.replace("\\", "\\\\").replace('"', '\\"')
    return '{"' + body.replace("\x00", '","') + '"}'


def _json_array(values: Sequence[Any]) -> str:
    """A PostgreSQL array literal of JSON texts. JSON text never holds a raw control character (both
    encoders escape them), so \\x01 can separate the elements while the escaping runs once over all."""
    if not values:
        return "{}"
    body = "\x01".join(_json_param(v) for v in values)
    return '{"' + body.replace("\\", "\\\\").replace('"', '\\"').replace("\x01", '","') + '"}'


_INSTANT_CACHE_LIMIT = 16384
_instants: dict[datetime, str] = {}


def _instant_text(value: datetime) -> str:
    """ISO 8601 text of an instant, remembered: isoformat costs about a microsecond and a batch's rows
    repeat the instants of its events, its received_at and earlier batches' creation instants. Equal
    aware datetimes are the same instant, so sharing their text is exact."""
    text = _instants.get(value)
    if text is None:
        text = value.isoformat()
        if len(_instants) >= _INSTANT_CACHE_LIMIT:
            _instants.clear()
        _instants[value] = text
    return text


def _instant_array(values: Sequence[datetime | None]) -> str:
    """A PostgreSQL array literal of instants (ISO 8601 with offset; NULL for None)."""
    get = _instants.get
    return "{" + ",".join(["NULL" if v is None else (get(v) or _instant_text(v)) for v in values]) + "}"


def _event_columns(events: Sequence[Event]) -> list[str]:
    return [
        _text_array([e.event_id for e in events]),
        _instant_array([e.timestamp for e in events]),
        _text_array([e.event_type for e in events]),
        _text_array([e.platform for e in events]),
        _text_array([e.cloud for e in events]),
        _text_array([e.resource_type for e in events]),
        _text_array([e.resource_id for e in events]),
        _text_array([e.project_id for e in events]),
        _text_array([e.source for e in events]),
        _json_array([e.payload for e in events]),
    ]


def _key_columns(keys: Sequence[ResourceKey]) -> list[str]:
    return [
        _text_array([k.cloud for k in keys]),
        _text_array([k.resource_type for k in keys]),
        _text_array([k.resource_id for k in keys]),
    ]


def _row_columns(rows: Sequence[ResourceRow]) -> list[str]:
    return [
        _text_array([r.key.cloud for r in rows]),
        _text_array([r.key.resource_type for r in rows]),
        _text_array([r.key.resource_id for r in rows]),
        _text_array([r.platform for r in rows]),
        _text_array([r.project_id for r in rows]),
        _text_array([r.state for r in rows]),
        _json_array([r.size for r in rows]),
        _instant_array([r.created_at for r in rows]),
        _instant_array([r.deleted_at for r in rows]),
        _text_array([r.last_event_type for r in rows]),
        _instant_array([r.last_event_at for r in rows]),
        _json_array([r.last_payload for r in rows]),
        _instant_array([r.first_event_at for r in rows]),
        _instant_array([r.last_received_at for r in rows]),
        _text_array([r.last_event_id for r in rows]),
    ]


async def _configure(conn: psycopg.AsyncConnection[Any]) -> None:
    # Projection rows carry two jsonb columns each; orjson parses them several times faster.
    set_json_loads(loads_json, conn)
    # Instants are UTC everywhere in Tally; with the session in UTC psycopg hands back datetimes already
    # in datetime.UTC, so reading a row costs no zone conversion (a named zone costs one per value).
    await conn.execute("SET TIME ZONE 'UTC'")


class _PgBatch:
    """One batch on one connection in pipeline mode, where statements are sent without waiting:

    - at the opening, the locks of the keys the caller named and the read of their rows;
    - at each ``add``, the insert of the events new to the batch (sorted, so that index locks are
      taken in one order), while the caller validates the next ones;
    - at ``finish``, once the rows and the inserts are back, the fold, a chunk of keys at a time, each
      chunk's upsert sent as soon as it is folded, so PostgreSQL writes one chunk while the next is
      folded here; then the dead letters and audit rows. Leaving the block sends COMMIT.

    The fold assumes every event added is new; when the inserts found some stored already, it is
    redone for the inserted ones. A late event costs one more round trip for the history it replays.
    Events of keys not named at the opening lock those keys when they come."""

    UPSERT_CHUNK = 128

    def __init__(self, store: PostgresStore, conn: psycopg.AsyncConnection[Any], at: datetime) -> None:
        self._store = store
        self._conn = conn
        self._tx = _PgTx(conn)
        self._at = at
        self._locked: set[ResourceKey] = set()
        self._reads: list[psycopg.AsyncCursor[Any]] = []
        self._inserts: list[psycopg.AsyncCursor[Any]] = []
        self._added: dict[tuple[str, datetime], Event] = {}
        self._repeats: list[Event] = []
        # Each event's key is built once: keys are hashed many times on the way and are not cheap.
        self._groups: dict[ResourceKey, list[StoredEvent]] = {}

    async def lock_and_read(self, keys: Sequence[ResourceKey]) -> None:
        """Send the locks of ``keys`` (in key order) and the read of their rows; wait for neither."""
        if not keys:
            return
        # The lock comes first: the row read runs after it, so it sees every committed fold.
        await self._store._lock_keys(self._tx, keys)
        # Results come back in binary: instants then cost no text formatting and parsing.
        self._reads.append(await self._conn.execute(_LOAD_ROWS, _key_columns(keys), binary=True))
        self._locked.update(keys)

    async def add(self, events: Sequence[Event]) -> None:
        fresh: list[Event] = []
        for event in events:
            pair = (event.event_id, event.timestamp)
            if pair in self._added:
                self._repeats.append(event)
            else:
                self._added[pair] = event
                fresh.append(event)
        if not fresh:
            return
        fresh.sort(key=lambda e: (e.event_id, e.timestamp))
        groups, at = self._groups, self._at
        unlocked: list[ResourceKey] = []
        for event in fresh:
            key = event.key
            group = groups.get(key)
            if group is None:
                groups[key] = [StoredEvent(event, at)]
                if key not in self._locked:
                    unlocked.append(key)
            else:
                group.append(StoredEvent(event, at))
        await self.lock_and_read(sorted(unlocked, key=key_order))
        self._inserts.append(
            await self._conn.execute(_INSERT_EVENTS, [at, *_event_columns(fresh)], binary=True)
        )

    async def finish(
        self, *, dead_letters: Sequence[DeadLetter] = (), audits: Sequence[AuditEntry] = ()
    ) -> BatchOutcome:
        store, at, tx = self._store, self._at, self._tx
        added = list(self._added.values())
        duplicates = list(self._repeats)
        inserted: list[Event] = []
        replayed: list[ResourceKey] = []
        if added:
            # Fetching the first result waits for every statement sent so far.
            rows: dict[ResourceKey, ResourceRow] = {}
            for cursor in self._reads:
                for row in map(store._row, await cursor.fetchall()):
                    rows[row.key] = row
            stored: set[tuple[str, datetime]] = set()
            for cursor in self._inserts:
                stored.update((r[0], as_utc(r[1])) for r in await cursor.fetchall())
            if len(stored) == len(added):
                inserted = added
                replayed = await self._fold_in_chunks(tx, rows)
            else:
                inserted = [e for e in added if (e.event_id, e.timestamp) in stored]
                duplicates.extend(e for e in added if (e.event_id, e.timestamp) not in stored)
                replayed = await store._fold(tx, [StoredEvent(e, at) for e in inserted], rows)
        await store._write_extras(tx, dead_letters, audits, at)
        return BatchOutcome(tuple(inserted), tuple(duplicates), tuple(replayed))

    async def _fold_in_chunks(self, tx: _PgTx, rows: dict[ResourceKey, ResourceRow]) -> list[ResourceKey]:
        replayed: list[ResourceKey] = []
        keys = sorted(self._groups, key=key_order)
        for start in range(0, len(keys), self.UPSERT_CHUNK):
            chunk = {key: self._groups[key] for key in keys[start : start + self.UPSERT_CHUNK]}
            plan = plan_fold(chunk, rows)
            folded = plan.rows_without_replay()
            if folded is None:
                replayed.extend(await self._store._finish_fold(tx, plan))
            elif folded:
                await self._conn.execute(_UPSERT_ROWS, _row_columns(folded))
        return replayed


class PostgresStore(UsageReads, SqlStore):
    dialect = "postgresql"

    def __init__(self, url: str, *, max_conns: int = 10) -> None:
        super().__init__()
        self._url = url
        self._max_conns = max_conns
        # The pool's count of failed connection attempts when a connection last opened: more now means
        # every attempt since has failed (the database is away), which a wait that times out reports.
        self._errors_at_connect = 0
        self._partition_months = PartitionMonths()
        self._pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=max_conns,
            open=False,
            kwargs={"autocommit": True},
            configure=self._configure,
            reconnect_timeout=RECONNECT_TIMEOUT_S,
            reconnect_failed=_reconnect_again,
            max_lifetime=MAX_LIFETIME_S,
        )
        self._read_only = ReadOnlyHealer(self._pool)

    async def _configure(self, conn: psycopg.AsyncConnection[Any]) -> None:
        await _configure(conn)
        self._errors_at_connect = self._connect_errors()

    def _connect_errors(self) -> int:
        return int(self._pool.get_stats().get("connections_errors", 0))

    def _connect_failing(self) -> bool:
        return self._connect_errors() > self._errors_at_connect

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A pooled connection, waiting no longer than the caller's deadline (see ``_pool_wait``); a
        write refused as read-only replaces the pool's sessions (see ``_read_only``)."""
        async with (
            pooled_connection(self._pool, self._max_conns, self._connect_failing) as conn,
            self._read_only.watching(conn),
        ):
            yield conn

    async def write_check(self) -> None:
        # Refused at once in a read-only session, though it changes no row.
        async with self._tx() as tx:
            await tx.execute("UPDATE schema_migrations SET version = version WHERE false")
        self._read_only.wrote()

    async def open(self) -> None:
        try:
            await self._pool.open(wait=True, timeout=15)
        except PoolTimeout as exc:
            await self._pool.close()
            raise StoreError(
                f"cannot connect to PostgreSQL at {describe_url(self._url)} within 15 s"
            ) from exc
        async with self._connection() as conn, conn.transaction():
            # Under the migrations' lock: replicas opening a fresh database together would otherwise
            # race in CREATE TABLE IF NOT EXISTS, which is not safe concurrently (the loser fails on
            # pg_type's unique index, and its daemon logged a crash of its store).
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", [_MIGRATION_LOCK])
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )

    async def aclose(self) -> None:
        await self._pool.close()

    @asynccontextmanager
    async def _tx(self) -> AsyncIterator[Tx]:
        async with self._connection() as conn, conn.transaction():
            yield _PgTx(conn)

    async def _fetch(
        self, sql: str, params: Sequence[Any] = (), *, prepare: bool | None = None, raw_json: bool = False
    ) -> list[tuple[Any, ...]]:
        """The statement's rows; ``prepare=False`` plans it for its values every time (psycopg's default,
        None, prepares a statement once it has run a few times); ``raw_json``: jsonb as the bytes of its
        text (``RawJsonb``), for the JSON pages to parse themselves."""
        async with self._connection() as conn:
            cursor = conn.cursor()
            if raw_json:
                cursor.adapters.register_loader("jsonb", RawJsonb)
            await cursor.execute(_pg(sql), list(params), prepare=prepare)
            return await cursor.fetchall()

    async def _events_page_recs(
        self, filters: EventFilter, limit: int, after: EventKey | None, select: str, *, raw_json: bool = False
    ) -> list[tuple[Any, ...]]:
        def page_sql(window: EventFilter, rows: int, after: EventKey | None) -> tuple[str, list[Any]]:
            return self.events_page_sql(window, rows, after, select=select)

        months = await self._partition_months.get(self._fetch)
        if not months:  # one table: one prepared statement
            return await self._fetch(*page_sql(filters, limit, after), raw_json=raw_json)
        # See _page_windows: never a generic plan.
        planned = functools.partial(self._fetch, prepare=False, raw_json=raw_json)
        return await read_events_page(planned, page_sql, months, filters, limit, after)

    async def list_events_json(
        self, filters: EventFilter, *, limit: int = 100, after: EventKey | None = None
    ) -> Page[dict[str, Any], EventKey]:
        recs = await self._events_page_recs(filters, limit, after, EVENT_JSON_SELECT, raw_json=True)
        await self.check_empty_page_reader(recs, filters.readable_by)
        return events_json_page(recs, limit)

    async def list_resources_json(
        self, filters: ResourceFilter, *, limit: int = 100, after: ResourceKey | None = None
    ) -> Page[dict[str, Any], ResourceKey]:
        sql = self.resources_page_sql(filters, limit, after, select=ROW_JSON_SELECT)
        recs = await self._fetch(*sql, raw_json=True)
        await self.check_empty_page_reader(recs, filters.readable_by)
        return resources_json_page(recs, limit)

    # -- conversions ----------------------------------------------------------------------------------
    def ts(self, value: datetime) -> Any:
        return as_utc(value)

    def from_ts(self, value: Any) -> datetime:
        if not isinstance(value, datetime):
            raise TypeError(f"expected a timestamptz, got {value!r}")
        return as_utc(value)

    def js(self, value: Any) -> Any:
        return Jsonb(value, dumps=canonical_json)

    def _row(self, rec: Sequence[Any]) -> ResourceRow:
        # The generic conversion, without its per-value method calls: jsonb arrives parsed and
        # timestamptz as aware datetimes (already in UTC: the session zone is UTC, see _configure).
        created_at, deleted_at, last_payload = rec[7], rec[8], rec[11]
        return ResourceRow(
            ResourceKey(rec[0], rec[1], rec[2]),
            rec[3],
            rec[4],
            rec[5],
            rec[6],
            None if created_at is None else as_utc(created_at),
            None if deleted_at is None else as_utc(deleted_at),
            rec[9],
            as_utc(rec[10]),
            {} if last_payload is None else last_payload,
            as_utc(rec[12]),
            as_utc(rec[13]),
            rec[14],
        )

    def from_js(self, value: Any) -> Any:
        return value

    def id_list(self, ids: Sequence[str]) -> Any:
        return [uuid.UUID(i) for i in ids]

    def from_id_list(self, value: Any) -> tuple[str, ...]:
        return tuple(str(v) for v in value or ())

    def bucket_expr(self, interval: Bucket) -> str:
        unit = "hour" if interval == "1h" else "day"
        return f"date_trunc('{unit}', timestamp, 'UTC')"

    def integrity_errors(self) -> tuple[type[BaseException], ...]:
        return (psycopg.errors.IntegrityError,)

    # -- migrations -----------------------------------------------------------------------------------
    async def _run_migration(self, migration: Migration, *, up: bool) -> None:
        direction = "up" if up else "down"
        try:
            async with self._connection() as conn, conn.transaction():
                # Replicas starting together: one applies, the others find the version recorded.
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", [_MIGRATION_LOCK])
                cursor = await conn.execute(
                    "SELECT 1 FROM schema_migrations WHERE version = %s", [migration.version]
                )
                recorded = await cursor.fetchone() is not None
                if recorded == up:
                    return
                await conn.execute(migration.up if up else migration.down)
                if up:
                    await conn.execute(
                        "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                        [migration.version, migration.name],
                    )
                else:
                    await conn.execute(
                        "DELETE FROM schema_migrations WHERE version = %s", [migration.version]
                    )
        except psycopg.Error as exc:
            raise MigrationError(
                f"migration postgresql/{migration.version:04d}_{migration.name} ({direction}) failed: {exc}"
            ) from exc

    # -- the hot ingest path ---------------------------------------------------------------------------
    async def write_batch(
        self,
        events: Sequence[Event],
        *,
        dead_letters: Sequence[DeadLetter] = (),
        audits: Sequence[AuditEntry] = (),
        received_at: datetime | None = None,
    ) -> BatchOutcome:
        async with self.open_batch((e.key for e in events), received_at=received_at) as batch:
            await batch.add(events)
            outcome = await batch.finish(dead_letters=dead_letters, audits=audits)
        self._read_only.wrote()
        return outcome

    @asynccontextmanager
    async def open_batch(
        self, keys: Iterable[ResourceKey], *, received_at: datetime | None = None
    ) -> AsyncIterator[BatchWriter]:
        """The batch's transaction on one connection in pipeline mode; see ``_PgBatch``."""
        at = as_utc(received_at) if received_at is not None else utc_now()
        async with self._connection() as conn, conn.pipeline(), conn.transaction():
            batch = _PgBatch(self, conn, at)
            await batch.lock_and_read(sorted(set(keys), key=key_order))
            yield batch

    async def _lock_keys(self, tx: Tx, keys: Sequence[ResourceKey]) -> None:
        assert isinstance(tx, _PgTx)
        names = [f"{k.cloud}:{k.resource_type}:{k.resource_id}" for k in keys]
        await tx.conn.execute(_LOCK_KEYS, [_text_array(names)])

    async def _upsert_rows(self, tx: Tx, rows: Sequence[ResourceRow]) -> None:
        assert isinstance(tx, _PgTx)
        if not rows:
            return
        await tx.conn.execute(_UPSERT_ROWS, _row_columns(rows))

    # -- the sync lock --------------------------------------------------------------------------------
    def sync_lock(self, cloud: str) -> AbstractAsyncContextManager[None]:
        return hold_sync_lock(self._url, cloud)
