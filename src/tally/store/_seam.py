"""The types the seam of the shared SQL speaks: one open transaction (``Tx``, and ``StreamingTx``
where the backend can stream a statement's rows), what a backend converts (``SqlSeam``, the part of
``_sql_dialect.SqlDialect`` that helper modules take, so they need not import it), the steps of the
ingest path (``WriteSteps``), and a backend's own JSON pages (``JsonPages``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol, TypeVar, runtime_checkable

from tally.core import Event, ResourceKey, ResourceRow

from ._records import EventFilter, EventKey, Page, ResourceFilter

T = TypeVar("T")
# What a dialect sent and will answer when awaited (PostgreSQL's pipeline answers only when asked).
Answer = Callable[[], Awaitable[T]]
EventPair = tuple[str, datetime]
# The statement of a page of events: (filters, limit, after) -> (sql, params).
PageSql = Callable[[EventFilter, int, "EventKey | None"], tuple[str, list[Any]]]


class Tx(Protocol):
    """One open transaction of a backend."""

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; return the affected row count."""
        ...

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...


@runtime_checkable
class StreamingTx(Tx, Protocol):
    """A transaction that can hand a statement's rows as they are read (PostgreSQL's server-side cursor)."""

    def stream(
        self, sql: str, params: Sequence[Any], *, size: int
    ) -> AbstractAsyncContextManager[AsyncIterator[list[tuple[Any, ...]]]]:
        """The rows of one statement in lists of up to ``size``, each fetched when the caller asks."""
        ...


class SqlSeam(Protocol):
    """What a backend supplies to statements written once for both dialects."""

    dialect: str

    def tx(self) -> AbstractAsyncContextManager[Tx]: ...

    def ts(self, value: datetime) -> Any: ...

    def from_ts(self, value: Any) -> datetime: ...

    def js(self, value: Any) -> Any: ...

    def from_js(self, value: Any) -> Any: ...


class WriteSteps(Protocol):
    """How each step of the ingest path (``_sql_ingest``) reaches the database: each ``send_`` hands
    back an ``Answer`` to await later. SQLite runs each statement at once (``_sql_steps``); PostgreSQL
    sends each as one statement of arrays in pipeline mode (``_pg_steps``)."""

    def batch_tx(self) -> AbstractAsyncContextManager[Tx]:
        """The transaction of one batch."""
        ...

    async def lock_keys(self, tx: Tx, keys: Sequence[ResourceKey]) -> None:
        """Serialise projection writers of the same keys until the transaction ends."""
        ...

    async def send_row_read(self, tx: Tx, keys: Sequence[ResourceKey]) -> Answer[list[ResourceRow]]:
        """Send the read of the rows of ``keys``; the answer holds the rows found."""
        ...

    async def send_insert(self, tx: Tx, events: Sequence[Event], at: datetime) -> Answer[set[EventPair]]:
        """Send the insert of ``events`` (distinct, sorted); the answer holds the pairs inserted."""
        ...

    async def upsert_rows(self, tx: Tx, rows: Sequence[ResourceRow]) -> None:
        """Write folded projection rows."""
        ...


class EventsPageSql(Protocol):
    def events_page_sql(
        self, filters: EventFilter, limit: int, after: EventKey | None, select: str = ...
    ) -> tuple[str, list[Any]]: ...


class ResourcesPageSql(Protocol):
    def resources_page_sql(
        self, filters: ResourceFilter, limit: int, after: ResourceKey | None, select: str = ...
    ) -> tuple[str, list[Any]]: ...


class JsonPages(Protocol):
    """A backend's own ``list_events_json`` and ``list_resources_json``: pages read straight as wire JSON."""

    async def list_events_json(
        self, filters: EventFilter, *, limit: int = 100, after: EventKey | None = None
    ) -> Page[dict[str, Any], EventKey]: ...

    async def list_resources_json(
        self, filters: ResourceFilter, *, limit: int = 100, after: ResourceKey | None = None
    ) -> Page[dict[str, Any], ResourceKey]: ...
