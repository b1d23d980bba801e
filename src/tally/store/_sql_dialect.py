"""The dialect seam of the shared SQL (``SqlDialect``): what a backend supplies, and the row
conversions built on it.

Every role of the store (``_sql_events``, ``_sql_projection``, ...) is written once against this
seam and holds one, passed to its constructor: transactions, a read without one, the conversion of
instants, JSON and id lists to and from the backend's column types, the time-bucket expression,
integrity errors, running a migration, the steps of the ingest path, how a page of events is read,
and the store's lifetime and sync lock. The conversions of an event and a projection row to and from
statement parameters are built on it here, once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any

from tally.core import Event, ResourceKey, ResourceRow, StoredEvent, utc_now

from ._interface import Bucket, EventFilter, EventKey, TokenNotUsable
from ._migrations import Migration
from ._seam import EventsPageSql, JsonPages, PageSql, ResourcesPageSql, Tx, WriteSteps

# A token or credential row that may be used at the instant given (the parameter).
USABLE = "revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)"
USABLE_TOKEN_SQL = f"EXISTS (SELECT 1 FROM api_tokens WHERE token_hash = ? AND {USABLE})"


class SqlDialect(ABC):
    """The seam every role of the shared SQL holds; see the module docstring."""

    dialect: str

    # -- lifetime -------------------------------------------------------------------------------------
    @abstractmethod
    async def open(self) -> None:
        """Connect, and make the migrations' own table."""

    @abstractmethod
    async def aclose(self) -> None: ...

    @abstractmethod
    async def write_check(self) -> None:
        """Raise ``StoreUnavailable`` when a write cannot commit now (``SchemaRole.write_check``)."""

    @abstractmethod
    def sync_lock(self, cloud: str) -> AbstractAsyncContextManager[None]:
        """``SyncRecordsRole.sync_lock``."""

    # -- statements -----------------------------------------------------------------------------------
    @abstractmethod
    def tx(self) -> AbstractAsyncContextManager[Tx]:
        """A transaction that commits on a clean exit and rolls back on an exception."""

    @abstractmethod
    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one read-only statement, without a transaction of its own (one round trip;
        on SQLite no write lock). The hot reads of every request use it: tokens, size names, schemas."""

    async def read_events_page(
        self, page_sql: PageSql, filters: EventFilter, limit: int, after: EventKey | None
    ) -> list[tuple[Any, ...]]:
        """The rows of a page of ``limit`` events and one more when a next page exists: one statement
        (PostgreSQL's partitioned table reads it a partition's range at a time: ``_page_windows``)."""
        return await self.fetch(*page_sql(filters, limit, after))

    @abstractmethod
    def write_steps(self) -> WriteSteps:
        """How each step of the ingest path reaches the database (``_sql_ingest``)."""

    def json_pages(self, events: EventsPageSql, resources: ResourcesPageSql) -> JsonPages | None:
        """The backend's own reads of pages as wire JSON; None: the roles' (rows, then ``to_wire``)."""
        return None

    @abstractmethod
    async def run_migration(self, migration: Migration, *, up: bool) -> None:
        """Run one part of a migration and record it in schema_migrations, in one transaction."""

    # -- conversions ----------------------------------------------------------------------------------
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

    def usable_token_condition(self, token_hash: str) -> tuple[str, Any]:
        """The condition of a listing read for an API token (``readable_by``): the token is usable now."""
        return (USABLE_TOKEN_SQL, (token_hash, self.ts(utc_now())))

    async def check_empty_page_reader(self, recs: Sequence[Any], readable_by: str | None) -> None:
        """Raise ``TokenNotUsable`` when a page read for an API token (``readable_by``) came back empty
        and the token is not usable: such a page cannot tell whether its token condition or its filters
        left every row out (a page with rows was read while the token was usable)."""
        if recs or readable_by is None:
            return
        if not await self.fetch(f"SELECT 1 WHERE {USABLE_TOKEN_SQL}", (readable_by, self.ts(utc_now()))):
            raise TokenNotUsable("the API token is unknown, revoked or expired")

    def opt_ts(self, value: datetime | None) -> Any:
        return None if value is None else self.ts(value)

    def from_opt_ts(self, value: Any) -> datetime | None:
        return None if value is None else self.from_ts(value)

    # -- rows -----------------------------------------------------------------------------------------
    def event_params(self, event: Event, received_at: datetime) -> tuple[Any, ...]:
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

    def stored(self, rec: Sequence[Any]) -> StoredEvent:
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

    def row_params(self, row: ResourceRow) -> tuple[Any, ...]:
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

    def row(self, rec: Sequence[Any]) -> ResourceRow:
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
