"""The events part of the shared SQL: inserting new events and every read of the events table.

A mixin of ``SqlStore`` over the dialect seam (see ``_sql_base``): pages,
histories by key, bucketed stats and the usage read (``_usage_sql``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from tally.core import Event, ResourceKey, StoredEvent, sorted_events

from ._interface import EVENT_GROUPS, Bucket, EventFilter, EventKey, Page, UsageScope
from ._named import named, size_names_of
from ._seam import Tx
from ._sql_base import SqlBase
from ._sql_text import (
    EVENT_COLUMNS,
    EVENT_SELECT,
    KEY_CHUNK,
    REBUILD_BATCH,
    group_columns,
    history_by_key_sql,
    key_order,
    key_params,
    where_clause,
)
from ._usage_sql import usage_histories


class EventsSql(SqlBase):
    """Store methods of the events table; see the module docstring."""

    async def _insert_events(self, tx: Tx, events: Sequence[Event], received_at: datetime) -> list[Event]:
        """Insert the events that are not stored yet; return those (the others are duplicates)."""
        stored: set[tuple[str, datetime]] = set()
        ids = sorted({e.event_id for e in events})
        for start in range(0, len(ids), KEY_CHUNK):
            chunk = ids[start : start + KEY_CHUNK]
            marks = ", ".join("?" for _ in chunk)
            for rec in await tx.fetchall(
                f"SELECT event_id, timestamp FROM events WHERE event_id IN ({marks})", chunk
            ):
                stored.add((rec[0], self.from_ts(rec[1])))
        fresh = [e for e in events if (e.event_id, e.timestamp) not in stored]
        if fresh:
            marks = ", ".join("?" for _ in EVENT_COLUMNS)
            await tx.executemany(
                f"INSERT INTO events ({EVENT_SELECT}) VALUES ({marks}) ON CONFLICT DO NOTHING",
                [self._event_params(e, received_at) for e in fresh],
            )
        return fresh

    async def _load_histories(
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
        """The rows of a page of ``limit`` events and one more when a next page exists (PostgreSQL's
        partitioned table reads it a partition's range at a time: ``_page_windows``)."""
        return await self._fetch(*self.events_page_sql(filters, limit, after, select=select))

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
        return await usage_histories(self, scope, limit=limit, after=after)
