"""The projection part of the shared SQL: current_resources, its writes, reads and rebuild.

A role of the store over the dialect seam (see ``_sql_dialect``). The rebuild locks
and writes rows as the ingest path does (the dialect's ``WriteSteps``); the sync's
narrow read of the projection is here too.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from tally.core import ResourceKey, ResourceRow, project

from ._interface import RESOURCE_GROUPS, Page, ResourceFilter, SyncRow
from ._seam import WriteSteps
from ._sql_dialect import SqlDialect
from ._sql_events import EventsSql
from ._sql_text import (
    REBUILD_BATCH,
    ROW_SELECT,
    group_columns,
    key_order,
    loads_json,
    where_clause,
)

log = logging.getLogger(__name__)


class ProjectionSql:
    """Store methods of the projection (current_resources); see the module docstring."""

    def __init__(self, sql: SqlDialect, events: EventsSql, steps: WriteSteps) -> None:
        # The seam's operations its statements call, bound once (no lookup through ``sql`` per call).
        self._fetch = sql.fetch
        self._row = sql.row
        self._tx = sql.tx
        self.check_empty_page_reader = sql.check_empty_page_reader
        self.from_opt_ts = sql.from_opt_ts
        self.from_ts = sql.from_ts
        self.usable_token_condition = sql.usable_token_condition
        self._load_histories = events.load_histories
        self._lock_keys = steps.lock_keys
        self._upsert_rows = steps.upsert_rows

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
        if f.readable_by is not None:
            conds.append(self.usable_token_condition(f.readable_by))
        return conds

    async def get_resource(self, key: ResourceKey) -> ResourceRow | None:
        async with self._tx() as tx:
            recs = await tx.fetchall(
                f"SELECT {ROW_SELECT} FROM current_resources "
                "WHERE cloud = ? AND resource_type = ? AND resource_id = ?",
                key_order(key),
            )
        return self._row(recs[0]) if recs else None

    def resources_page_sql(
        self, filters: ResourceFilter, limit: int, after: ResourceKey | None, select: str = ROW_SELECT
    ) -> tuple[str, list[Any]]:
        """The statement of a page of ``limit + 1`` projection rows."""
        conds = self._resource_conditions(filters)
        if after is not None:
            conds.append(("(cloud, resource_type, resource_id) > (?, ?, ?)", key_order(after)))
        where, params = where_clause(conds)
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
        await self.check_empty_page_reader(recs, filters.readable_by)
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
        columns = group_columns(group_by, RESOURCE_GROUPS)
        where, params = where_clause(self._resource_conditions(filters))
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
                f"SELECT {ROW_SELECT} FROM current_resources WHERE cloud = ? "
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
        where, params = where_clause(conds)
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
