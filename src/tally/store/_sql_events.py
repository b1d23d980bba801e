"""The events role of the shared SQL: every read of the events table.

A role of the store over the dialect seam (see ``_sql_dialect``): pages,
histories by key, bucketed stats and the usage reads (``_usage_sql``). The ingest
path inserts the events (``_sql_ingest``, through the dialect's ``WriteSteps``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any

from tally.core import ResourceKey, StoredEvent, sorted_events

from ._interface import EVENT_GROUPS, Bucket, EventFilter, EventKey, Page, UsageScope
from ._named import named, size_names_of
from ._seam import Tx
from ._sql_dialect import SqlDialect
from ._sql_text import (
    EVENT_SELECT,
    REBUILD_BATCH,
    group_columns,
    history_by_key_sql,
    key_order,
    key_params,
    where_clause,
)
from ._usage_sql import STREAM_ROWS, FactHistory, open_usage_stream, usage_histories


class EventsSql:
    """Store methods of the events table; see the module docstring."""

    def __init__(self, sql: SqlDialect) -> None:
        # The seam's operations its statements call, bound once (no lookup through ``sql`` per call).
        self._stored = sql.stored
        self._tx = sql.tx
        self.bucket_expr = sql.bucket_expr
        self.check_empty_page_reader = sql.check_empty_page_reader
        self.from_ts = sql.from_ts
        self.ts = sql.ts
        self.usable_token_condition = sql.usable_token_condition
        self._sql = sql
        self._read_events_page = sql.read_events_page

    async def load_histories(
        self, tx: Tx, keys: Sequence[ResourceKey]
    ) -> dict[ResourceKey, list[StoredEvent]]:
        histories: dict[ResourceKey, list[StoredEvent]] = defaultdict(list)
        names = await size_names_of(tx, {key.cloud for key in keys})
        for start in range(0, len(keys), REBUILD_BATCH):
            chunk = keys[start : start + REBUILD_BATCH]
            for rec in await tx.fetchall(history_by_key_sql(len(chunk)), key_params(chunk)):
                stored = named(self._stored(rec), names)
                histories[stored.event.key].append(stored)
        return histories

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
        if f.readable_by is not None:
            conds.append(self.usable_token_condition(f.readable_by))
        return conds

    def events_page_sql(
        self, filters: EventFilter, limit: int, after: EventKey | None, select: str = EVENT_SELECT
    ) -> tuple[str, list[Any]]:
        """The statement of a page of ``limit + 1`` events (the extra row tells a next page exists)."""
        conds = self._event_conditions(filters)
        if after is not None:
            conds.append(("(timestamp, event_id) > (?, ?)", (self.ts(after[0]), after[1])))
        where, params = where_clause(conds)
        sql = f"SELECT {select} FROM events WHERE {where} ORDER BY timestamp, event_id LIMIT ?"
        return sql, [*params, limit + 1]

    async def _events_page_recs(
        self, filters: EventFilter, limit: int, after: EventKey | None, select: str
    ) -> list[tuple[Any, ...]]:
        """The rows of a page of ``limit`` events and one more when a next page exists (read as the
        dialect reads a page: ``SqlDialect.read_events_page``)."""

        def page_sql(window: EventFilter, rows: int, after: EventKey | None) -> tuple[str, list[Any]]:
            return self.events_page_sql(window, rows, after, select=select)

        return await self._read_events_page(page_sql, filters, limit, after)

    async def list_events(
        self, filters: EventFilter, *, limit: int = 100, after: EventKey | None = None
    ) -> Page[StoredEvent, EventKey]:
        # No transaction: one statement sees one snapshot (on PostgreSQL a BEGIN and a COMMIT would be two
        # more round trips per page; the partitioned table's statements per month, ``_page_windows``).
        recs = await self._events_page_recs(filters, limit, after, EVENT_SELECT)
        await self.check_empty_page_reader(recs, filters.readable_by)
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
            f"SELECT {EVENT_SELECT} FROM events WHERE cloud = ? AND resource_type = ? AND resource_id = ? "
            "ORDER BY timestamp, received_at, event_id"
        )
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        async with self._tx() as tx:
            recs = await tx.fetchall(sql, params)
            names = await size_names_of(tx, (key.cloud,)) if recs else {}
        return [named(self._stored(r), names) for r in recs]

    async def lifecycle_events(self, key: ResourceKey) -> list[StoredEvent]:
        return await self.resource_history(key)

    async def histories(self, keys: Sequence[ResourceKey]) -> dict[ResourceKey, list[StoredEvent]]:
        ordered = sorted(set(keys), key=key_order)
        async with self._tx() as tx:
            loaded = await self.load_histories(tx, ordered)
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
        columns = group_columns(group_by, EVENT_GROUPS)
        conds = self._event_conditions(filters)
        conds += [("timestamp >= ?", self.ts(start)), ("timestamp < ?", self.ts(end))]
        where, params = where_clause(conds)
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
        return await usage_histories(self._sql, scope, limit=limit, after=after)

    def open_usage_stream(
        self, scope: UsageScope, *, rows: int = STREAM_ROWS
    ) -> AbstractAsyncContextManager[AsyncIterator[list[FactHistory]]]:
        return open_usage_stream(self._sql, scope, rows=rows)
