"""The dialect seam of the shared SQL (``SqlBase``), the schema migrations and the row conversions.

Every mixin of ``SqlStore`` derives from ``SqlBase``: what a backend must
supply is declared here once (transactions, instants, JSON, id lists, the bucket
expression, integrity errors, running a migration), with the conversions of an
event and a projection row to and from statement parameters built on it.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any

from tally.core import Event, ResourceKey, ResourceRow, StoredEvent, utc_now

from ._interface import Bucket, MigrationError, SchemaStatus, TokenNotUsable
from ._migrations import Migration, load_migrations
from ._seam import Tx

log = logging.getLogger(__name__)


# A token or credential row that may be used at the instant given (the parameter).
USABLE = "revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)"
USABLE_TOKEN_SQL = f"EXISTS (SELECT 1 FROM api_tokens WHERE token_hash = ? AND {USABLE})"


class SqlBase(ABC):
    """The dialect seam every shared-SQL mixin is written against; see the module docstring."""

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

    def usable_token_condition(self, token_hash: str) -> tuple[str, Any]:
        """The condition of a listing read for an API token (``readable_by``): the token is usable now."""
        return (USABLE_TOKEN_SQL, (token_hash, self.ts(utc_now())))

    async def check_empty_page_reader(self, recs: Sequence[Any], readable_by: str | None) -> None:
        """Raise ``TokenNotUsable`` when a page read for an API token (``readable_by``) came back empty
        and the token is not usable: such a page cannot tell whether its token condition or its filters
        left every row out (a page with rows was read while the token was usable)."""
        if recs or readable_by is None:
            return
        if not await self._fetch(f"SELECT 1 WHERE {USABLE_TOKEN_SQL}", (readable_by, self.ts(utc_now()))):
            raise TokenNotUsable("the API token is unknown, revoked or expired")

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
