"""The catalog part of the shared SQL: size names per cloud and the size schema of resource types.

A role of the store over the dialect seam (see ``_sql_dialect``).

Size names are learnt, never forgotten: cinder's notifications carry a volume type's id and its
listing the name, and a type deleted from the cloud still names the events that carried its id. A
name learnt for an id some projection rows still hold (their events arrived before any type
listing) is written into those rows in the same transaction, so the next diff sees no drift and
books no poll-dated correction; the events themselves are append-only and are named when read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tally.core import utc_now

from ._interface import ResourceType, RuleViolation, SizeName
from ._sql_dialect import SqlDialect

# The size with one member set to a name, and one member's text, per dialect; parameters (member,
# name) and (member) in that order.
_NAMED_SIZE = {
    "postgresql": "jsonb_set(size, ARRAY[?::text], to_jsonb(?::text))",
    "sqlite": "json_set(size, '$.' || ?, ?)",
}
_SIZE_MEMBER = {"postgresql": "size->>(?::text)", "sqlite": "json_extract(size, '$.' || ?)"}


class CatalogSql:
    """Store methods of size names and resource types; see the module docstring."""

    def __init__(self, sql: SqlDialect) -> None:
        # The seam's operations its statements call, bound once (no lookup through ``sql`` per call).
        self._fetch = sql.fetch
        self._tx = sql.tx
        self.dialect = sql.dialect
        self.from_js = sql.from_js
        self.from_ts = sql.from_ts
        self.js = sql.js
        self.ts = sql.ts

    async def size_names(self, cloud: str) -> list[SizeName]:
        recs = await self._fetch(
            "SELECT cloud, resource_type, member, value, name FROM size_names WHERE cloud = ? "
            "ORDER BY resource_type, member, value",
            (cloud,),
        )
        return [SizeName(*rec) for rec in recs]

    async def learn_size_names(self, cloud: str, rows: Sequence[SizeName]) -> list[SizeName]:
        for row in rows:
            if row.cloud != cloud:
                raise RuleViolation(f"size name row of cloud {row.cloud!r} given to learn those of {cloud!r}")
        known = {(n.resource_type, n.member, n.value): n.name for n in await self.size_names(cloud)}
        learnt = [r for r in rows if known.get((r.resource_type, r.member, r.value)) != r.name]
        if not learnt:
            return []
        member_of = _SIZE_MEMBER[self.dialect]
        async with self._tx() as tx:
            await tx.executemany(
                "INSERT INTO size_names (cloud, resource_type, member, value, name) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (cloud, resource_type, member, value) "
                "DO UPDATE SET name = excluded.name",
                [(r.cloud, r.resource_type, r.member, r.value, r.name) for r in learnt],
            )
            for r in learnt:
                await tx.execute(
                    f"UPDATE current_resources SET size = {_NAMED_SIZE[self.dialect]} "
                    f"WHERE cloud = ? AND resource_type = ? AND {member_of} = ?",
                    (r.member, r.name, cloud, r.resource_type, r.member, r.value),
                )
        return learnt

    # -- resource types -------------------------------------------------------------------------------
    def _resource_type(self, rec: Sequence[Any]) -> ResourceType:
        return ResourceType(rec[0], rec[1], self.from_js(rec[2]), self.from_ts(rec[3]))

    async def get_resource_type(self, platform: str, resource_type: str) -> ResourceType | None:
        recs = await self._fetch(
            "SELECT platform, resource_type, size_schema, updated_at FROM resource_types "
            "WHERE platform = ? AND resource_type = ?",
            (platform, resource_type),
        )
        return self._resource_type(recs[0]) if recs else None

    async def list_resource_types(self) -> list[ResourceType]:
        async with self._tx() as tx:
            recs = await tx.fetchall(
                "SELECT platform, resource_type, size_schema, updated_at FROM resource_types "
                "ORDER BY platform, resource_type"
            )
        return [self._resource_type(r) for r in recs]

    async def put_resource_type(
        self, platform: str, resource_type: str, size_schema: Mapping[str, Any]
    ) -> ResourceType:
        now = utc_now()
        async with self._tx() as tx:
            await tx.execute(
                "INSERT INTO resource_types (platform, resource_type, size_schema, updated_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (platform, resource_type) "
                "DO UPDATE SET size_schema = excluded.size_schema, "
                "updated_at = excluded.updated_at",
                (platform, resource_type, self.js(dict(size_schema)), self.ts(now)),
            )
        return ResourceType(platform, resource_type, dict(size_schema), now)
