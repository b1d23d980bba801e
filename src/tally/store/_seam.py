"""The dialect seam the shared SQL is written against: one open transaction (``Tx``, and
``StreamingTx`` where the backend can stream a statement's rows) and what a backend converts
(``SqlSeam``). Modules of shared SQL beside ``_sql`` take a ``SqlSeam``, so they need not import the
store that calls them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol, runtime_checkable


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

    def _tx(self) -> AbstractAsyncContextManager[Tx]: ...

    def ts(self, value: datetime) -> Any: ...

    def from_ts(self, value: Any) -> datetime: ...

    def js(self, value: Any) -> Any: ...

    def from_js(self, value: Any) -> Any: ...
