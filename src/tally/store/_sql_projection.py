"""The projection part of the shared SQL: current_resources, its writes, reads and rebuild.

A mixin of ``SqlStore`` over the dialect seam (see ``_sql_base``). The lock of
projection writers (``_lock_keys``) and the upsert of folded rows are seams a
backend may replace; the sync's narrow read of the projection is here too.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from tally.core import ResourceKey, ResourceRow, project

from ._interface import RESOURCE_GROUPS, Page, ResourceFilter, SyncRow
from ._seam import Tx
from ._sql_events import EventsSql
from ._sql_text import (
    KEY_CHUNK,
    REBUILD_BATCH,
    ROW_COLUMNS,
    ROW_SELECT,
    group_columns,
    key_order,
    key_params,
    loads_json,
    rows_by_key_sql,
    where_clause,
)

log = logging.getLogger(__name__)


class ProjectionSql(EventsSql):
    """Store methods of the projection (current_resources); see the module docstring."""

    @abstractmethod
    async def _lock_keys(self, tx: Tx, keys: Sequence[ResourceKey]) -> None:
        """Serialise projection writers of the same keys until the transaction ends."""

    async def _load_rows(self, tx: Tx, keys: Sequence[ResourceKey]) -> dict[ResourceKey, ResourceRow]:
        rows: dict[ResourceKey, ResourceRow] = {}
        for start in range(0, len(keys), KEY_CHUNK):
            chunk = keys[start : start + KEY_CHUNK]
            for rec in await tx.fetchall(rows_by_key_sql(len(chunk)), key_params(chunk)):
                row = self._row(rec)
                rows[row.key] = row
        return rows

    async def _upsert_rows(self, tx: Tx, rows: Sequence[ResourceRow]) -> None:
        marks = ", ".join("?" for _ in ROW_COLUMNS)
        updates = ", ".join(f"{c} = excluded.{c}" for c in ROW_COLUMNS[3:])
        await tx.executemany(
            f"INSERT INTO current_resources ({ROW_SELECT}) VALUES ({marks}) "
            f"ON CONFLICT (cloud, resource_type, resource_id) DO UPDATE SET {updates}",
            [self._row_params(r) for r in rows],
        )

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
