"""PostgreSQL's steps of the ingest path (``WriteSteps``): each sent on the batch's one connection in
pipeline mode, to be answered when the path asks.

One ``INSERT ... SELECT FROM unnest(...) ON CONFLICT DO NOTHING RETURNING`` for the events, one
statement that takes the per-key transaction advisory locks, one that reads the rows, one upsert of
the folded rows (``_pg_batch``, with the array literals of ``_pg_arrays``). The path itself is
``_sql_ingest``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime
from typing import Any

import psycopg

from tally.core import Event, ResourceKey, ResourceRow

from ._pg_arrays import row_columns, text_array
from ._pg_batch import LOCK_KEYS, UPSERT_ROWS, send_insert, send_row_read
from ._pg_connection import PgTx
from ._seam import Answer, EventPair, Tx


class PgSteps:
    """The ingest path's steps on pooled connections; see the module docstring."""

    def __init__(
        self,
        connection: Callable[[], AbstractAsyncContextManager[psycopg.AsyncConnection[Any]]],
        wrote: Callable[[], None],
        row: Callable[[Sequence[Any]], ResourceRow],
    ) -> None:
        self._connection = connection
        self._wrote = wrote  # a write committed: the read-only healer's mark (``_read_only``)
        self._row = row

    @asynccontextmanager
    async def batch_tx(self) -> AsyncIterator[Tx]:
        """The batch's transaction on one connection in pipeline mode: each step is sent without
        waiting, and answers when ``finish`` asks."""
        async with self._connection() as conn, conn.pipeline(), conn.transaction():
            yield PgTx(conn)
        self._wrote()

    async def send_row_read(self, tx: Tx, keys: Sequence[ResourceKey]) -> Answer[list[ResourceRow]]:
        assert isinstance(tx, PgTx)
        return await send_row_read(tx.conn, keys, self._row)

    async def send_insert(self, tx: Tx, events: Sequence[Event], at: datetime) -> Answer[set[EventPair]]:
        assert isinstance(tx, PgTx)
        return await send_insert(tx.conn, events, at)

    async def lock_keys(self, tx: Tx, keys: Sequence[ResourceKey]) -> None:
        assert isinstance(tx, PgTx)
        names = [f"{k.cloud}:{k.resource_type}:{k.resource_id}" for k in keys]
        await tx.conn.execute(LOCK_KEYS, [text_array(names)])

    async def upsert_rows(self, tx: Tx, rows: Sequence[ResourceRow]) -> None:
        assert isinstance(tx, PgTx)
        if not rows:
            return
        await tx.conn.execute(UPSERT_ROWS, row_columns(rows))
