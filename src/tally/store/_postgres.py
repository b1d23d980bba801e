"""The PostgreSQL backend (psycopg 3 async, psycopg_pool): production, shared by every replica.

``PostgresDialect`` is the seam's PostgreSQL side (``_sql_dialect``); ``PostgresStore`` assembles
the roles over it (``_sql``). The ingest path is the shared one (``_sql_ingest``); this backend's
steps send a whole batch as arrays on one connection in pipeline mode (``_pg_steps``). Pages of
events on the partitioned table are read a month's range at a time (``_page_windows``), and pages
as wire JSON straight from jsonb's text (``PgJsonPages``, ``_pg_pages``).

The pool's sessions and the ``Tx`` over a connection are ``_pg_connection``'s;
the sync lock of a cloud is a session advisory lock on a connection of its own
(``_pg_sync_lock``).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from tally.core import ResourceKey, ResourceRow, as_utc

from ._interface import (
    Bucket,
    EventFilter,
    EventKey,
    MigrationError,
    Page,
    ResourceFilter,
    StoreError,
)
from ._migrations import Migration
from ._page_windows import PartitionMonths, read_events_page
from ._pg_connection import (
    RECONNECT_TIMEOUT_S,
    PgTx,
    configure_session,
    describe_url,
    pg_sql,
    reconnect_again,
)
from ._pg_pages import EVENT_JSON_SELECT, ROW_JSON_SELECT, RawJsonb, events_json_page, resources_json_page
from ._pg_space import SpaceFaults
from ._pg_steps import PgSteps
from ._pg_sync_lock import LEASE_S as SYNC_LOCK_LEASE_S
from ._pg_sync_lock import hold_sync_lock
from ._pool_wait import pooled_connection
from ._read_only import MAX_LIFETIME_S, ReadOnlyHealer, writable_target
from ._seam import EventsPageSql, JsonPages, PageSql, ResourcesPageSql, Tx, WriteSteps
from ._sql import SqlStore
from ._sql_dialect import SqlDialect
from ._sql_text import canonical_json

_MIGRATION_LOCK = 0x7A11_0001


class PostgresDialect(SqlDialect):
    """The PostgreSQL side of the seam; see the module docstring."""

    dialect = "postgresql"

    def __init__(
        self, url: str, *, max_conns: int = 10, sync_lock_lease_s: float = SYNC_LOCK_LEASE_S
    ) -> None:
        # The pool and each sync's lock connection alike: a lock taken on a demoted primary would not
        # exclude a replica that took it on the new one.
        self._url = writable_target(url)
        self._sync_lock_lease_s = sync_lock_lease_s
        self._max_conns = max_conns
        # The pool's count of failed connection attempts when a connection last opened: more now means
        # every attempt since has failed (the database is away), which a wait that times out reports.
        self._errors_at_connect = 0
        self._partition_months = PartitionMonths()
        self._pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] = AsyncConnectionPool(
            self._url,
            min_size=1,
            max_size=max_conns,
            open=False,
            kwargs={"autocommit": True},
            configure=self._configure,
            reconnect_timeout=RECONNECT_TIMEOUT_S,
            reconnect_failed=reconnect_again,
            max_lifetime=MAX_LIFETIME_S,
        )
        self._read_only = ReadOnlyHealer(self._pool)
        self._space = SpaceFaults()

    async def _configure(self, conn: psycopg.AsyncConnection[Any]) -> None:
        await configure_session(conn)
        self._errors_at_connect = self._connect_errors()

    def _connect_errors(self) -> int:
        return int(self._pool.get_stats().get("connections_errors", 0))

    def _connect_failing(self) -> bool:
        return self._connect_errors() > self._errors_at_connect

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A pooled connection, waiting no longer than the caller's deadline (see ``_pool_wait``); a
        write refused as read-only replaces the pool's sessions (see ``_read_only``), one refused for
        want of space is named (see ``_pg_space``)."""
        async with (
            pooled_connection(self._pool, self._max_conns, self._connect_failing) as conn,
            self._read_only.watching(conn),
            self._space.watching(),
        ):
            yield conn

    async def write_check(self) -> None:
        # Refused at once in a read-only session, though it changes no row; a write that needs a new
        # block is tried too, for a full disk (see ``_pg_space``).
        async with self._connection() as conn:
            async with conn.transaction():
                await conn.execute("UPDATE schema_migrations SET version = version WHERE false")
            await self._space.probe(conn)
        self._read_only.wrote()

    async def open(self) -> None:
        try:
            await self._pool.open(wait=True, timeout=15)
        except PoolTimeout as exc:
            await self._pool.close()
            raise StoreError(
                f"cannot connect to PostgreSQL at {describe_url(self._url)} within 15 s"
            ) from exc
        try:
            async with self._connection() as conn, conn.transaction():
                # Under the migrations' lock: replicas opening a fresh database together would
                # otherwise race in CREATE TABLE IF NOT EXISTS, which is not safe concurrently (the
                # loser fails on pg_type's unique index, and its daemon logged a crash of its store).
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", [_MIGRATION_LOCK])
                await conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                    "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
                )
        except BaseException:
            # Not opened, so nobody closes it: its pool's workers would keep trying to connect.
            await self._pool.close()
            raise

    async def aclose(self) -> None:
        await self._pool.close()

    @asynccontextmanager
    async def tx(self) -> AsyncIterator[Tx]:
        async with self._connection() as conn, conn.transaction():
            yield PgTx(conn)

    async def fetch(
        self, sql: str, params: Sequence[Any] = (), *, prepare: bool | None = None, raw_json: bool = False
    ) -> list[tuple[Any, ...]]:
        """The statement's rows; ``prepare=False`` plans it for its values every time (psycopg's default,
        None, prepares a statement once it has run a few times); ``raw_json``: jsonb as the bytes of its
        text (``RawJsonb``), for the JSON pages to parse themselves."""
        async with self._connection() as conn:
            cursor = conn.cursor()
            if raw_json:
                cursor.adapters.register_loader("jsonb", RawJsonb)
            await cursor.execute(pg_sql(sql), list(params), prepare=prepare)
            return await cursor.fetchall()

    async def read_events_page(
        self,
        page_sql: PageSql,
        filters: EventFilter,
        limit: int,
        after: EventKey | None,
        *,
        raw_json: bool = False,
    ) -> list[tuple[Any, ...]]:
        """The seam's read of a page, a partition's range at a time once ``events`` is partitioned;
        ``raw_json`` as ``fetch`` takes it (``PgJsonPages``)."""
        months = await self._partition_months.get(self.fetch)
        if not months:  # one table: one prepared statement
            return await self.fetch(*page_sql(filters, limit, after), raw_json=raw_json)
        # See _page_windows: never a generic plan.
        planned = functools.partial(self.fetch, prepare=False, raw_json=raw_json)
        return await read_events_page(planned, page_sql, months, filters, limit, after)

    def write_steps(self) -> WriteSteps:
        return PgSteps(self._connection, self._read_only.wrote, self.row)

    def json_pages(self, events: EventsPageSql, resources: ResourcesPageSql) -> JsonPages:
        return PgJsonPages(self, events, resources)

    # -- conversions ----------------------------------------------------------------------------------
    def ts(self, value: datetime) -> Any:
        return as_utc(value)

    def from_ts(self, value: Any) -> datetime:
        if not isinstance(value, datetime):
            raise TypeError(f"expected a timestamptz, got {value!r}")
        return as_utc(value)

    def js(self, value: Any) -> Any:
        return Jsonb(value, dumps=canonical_json)

    def row(self, rec: Sequence[Any]) -> ResourceRow:
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
    async def run_migration(self, migration: Migration, *, up: bool) -> None:
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

    # -- the sync lock --------------------------------------------------------------------------------
    def sync_lock(self, cloud: str) -> AbstractAsyncContextManager[None]:
        return hold_sync_lock(self._url, cloud, lease_s=self._sync_lock_lease_s)


class PgJsonPages:
    """Pages read straight as wire JSON: jsonb comes as the bytes of its text, parsed once with the page
    (``_pg_pages``), instead of rows converted and then turned to wire."""

    def __init__(self, sql: PostgresDialect, events: EventsPageSql, resources: ResourcesPageSql) -> None:
        self._sql = sql
        self._events = events
        self._resources = resources

    async def list_events_json(
        self, filters: EventFilter, *, limit: int = 100, after: EventKey | None = None
    ) -> Page[dict[str, Any], EventKey]:
        def page_sql(window: EventFilter, rows: int, after: EventKey | None) -> tuple[str, list[Any]]:
            return self._events.events_page_sql(window, rows, after, select=EVENT_JSON_SELECT)

        recs = await self._sql.read_events_page(page_sql, filters, limit, after, raw_json=True)
        await self._sql.check_empty_page_reader(recs, filters.readable_by)
        return events_json_page(recs, limit)

    async def list_resources_json(
        self, filters: ResourceFilter, *, limit: int = 100, after: ResourceKey | None = None
    ) -> Page[dict[str, Any], ResourceKey]:
        sql = self._resources.resources_page_sql(filters, limit, after, select=ROW_JSON_SELECT)
        recs = await self._sql.fetch(*sql, raw_json=True)
        await self._sql.check_empty_page_reader(recs, filters.readable_by)
        return resources_json_page(recs, limit)


def PostgresStore(url: str, *, max_conns: int = 10, sync_lock_lease_s: float = SYNC_LOCK_LEASE_S) -> SqlStore:
    """The store of the PostgreSQL database at ``url``: the roles over ``PostgresDialect`` (named as
    the class it used to be, since callers build it as one)."""
    return SqlStore(PostgresDialect(url, max_conns=max_conns, sync_lock_lease_s=sync_lock_lease_s))
