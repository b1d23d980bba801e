"""The projects part of the shared SQL: projects and the dated relations between them.

A role of the store over the dialect seam (see ``_sql_dialect``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from tally.core import as_utc, utc_now

from ._ids import is_uuid
from ._interface import Conflict, Page, Project, Relation, RuleViolation
from ._sql_dialect import SqlDialect
from ._sql_text import where_clause

VIRTUAL = frozenset({"meta", "partner"})


class ProjectsSql:
    """Store methods of projects and their relations; see the module docstring."""

    def __init__(self, sql: SqlDialect) -> None:
        # The seam's operations its statements call, bound once (no lookup through ``sql`` per call).
        self._fetch = sql.fetch
        self._tx = sql.tx
        self.from_js = sql.from_js
        self.from_opt_ts = sql.from_opt_ts
        self.from_ts = sql.from_ts
        self.integrity_errors = sql.integrity_errors
        self.js = sql.js
        self.ts = sql.ts

    _PROJECT_SELECT = "SELECT id, platform, cloud, external_id, name, metadata, created_at FROM projects"
    _RELATION_SELECT = (
        "SELECT id, source_id, target_id, relation_type, metadata, valid_from, valid_to, created_at "
        "FROM project_relations"
    )

    def _project(self, rec: Sequence[Any]) -> Project:
        return Project(
            str(rec[0]), rec[1], rec[2], rec[3], rec[4], self.from_js(rec[5]), self.from_ts(rec[6])
        )

    def _relation(self, rec: Sequence[Any]) -> Relation:
        return Relation(
            str(rec[0]),
            str(rec[1]),
            str(rec[2]),
            rec[3],
            self.from_js(rec[4]),
            self.from_ts(rec[5]),
            self.from_opt_ts(rec[6]),
            self.from_ts(rec[7]),
        )

    async def create_project(
        self,
        *,
        platform: str,
        cloud: str,
        external_id: str,
        name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Project:
        if platform != cloud and (platform in VIRTUAL or cloud in VIRTUAL):
            raise RuleViolation(
                f"project platform {platform!r} and cloud {cloud!r}: a virtual platform (meta, partner) "
                "needs platform = cloud"
            )
        project_id = str(uuid.uuid4())
        now = utc_now()
        meta = dict(metadata or {})
        try:
            async with self._tx() as tx:
                if await tx.fetchall(
                    "SELECT 1 FROM projects WHERE cloud = ? AND external_id = ?", (cloud, external_id)
                ):
                    raise Conflict(f"a project with cloud {cloud!r} and external_id {external_id!r} exists")
                await tx.execute(
                    "INSERT INTO projects (id, platform, cloud, external_id, name, metadata, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (project_id, platform, cloud, external_id, name, self.js(meta), self.ts(now)),
                )
        except self.integrity_errors() as exc:
            raise Conflict(f"a project with cloud {cloud!r} and external_id {external_id!r} exists") from exc
        return Project(project_id, platform, cloud, external_id, name, meta, now)

    async def get_project(self, project_id: str) -> Project | None:
        if not is_uuid(project_id):
            return None
        async with self._tx() as tx:
            recs = await tx.fetchall(f"{self._PROJECT_SELECT} WHERE id = ?", (project_id,))
        return self._project(recs[0]) if recs else None

    async def find_project(self, cloud: str, external_id: str) -> Project | None:
        async with self._tx() as tx:
            recs = await tx.fetchall(
                f"{self._PROJECT_SELECT} WHERE cloud = ? AND external_id = ?", (cloud, external_id)
            )
        return self._project(recs[0]) if recs else None

    async def list_projects(
        self,
        *,
        platform: str | None = None,
        cloud: str | None = None,
        limit: int = 100,
        after: str | None = None,
    ) -> Page[Project, str]:
        conds = [(f"{c} = ?", v) for c, v in (("platform", platform), ("cloud", cloud)) if v is not None]
        if after is not None:
            if not is_uuid(after):
                raise RuleViolation(f"project cursor {after!r} is not a project id")
            conds.append(("id > ?", after))
        where, params = where_clause(conds)
        async with self._tx() as tx:
            recs = await tx.fetchall(
                f"{self._PROJECT_SELECT} WHERE {where} ORDER BY id LIMIT ?", [*params, limit + 1]
            )
        items = [self._project(r) for r in recs[:limit]]
        return Page(items, items[-1].id if len(recs) > limit else None)

    async def update_project(
        self, project_id: str, *, name: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Project | None:
        if not is_uuid(project_id):
            return None
        sets: list[tuple[str, Any]] = []
        if name is not None:
            sets.append(("name = ?", name))
        if metadata is not None:
            sets.append(("metadata = ?", self.js(dict(metadata))))
        if sets:
            async with self._tx() as tx:
                await tx.execute(
                    f"UPDATE projects SET {', '.join(s for s, _ in sets)} WHERE id = ?",
                    [*(v for _, v in sets), project_id],
                )
        return await self.get_project(project_id)

    async def create_relation(
        self,
        *,
        source_id: str,
        target_id: str,
        relation_type: str,
        metadata: Mapping[str, Any] | None = None,
        valid_from: datetime | None = None,
    ) -> Relation:
        if source_id == target_id:
            raise RuleViolation("a relation needs two different projects (source_id equals target_id)")
        relation_id = str(uuid.uuid4())
        now = utc_now()
        start = as_utc(valid_from) if valid_from is not None else now
        meta = dict(metadata or {})
        conflict = f"an active {relation_type!r} relation from {source_id} to {target_id} exists"
        try:
            async with self._tx() as tx:
                for member, pid in (("source_id", source_id), ("target_id", target_id)):
                    if not is_uuid(pid) or not await tx.fetchall(
                        "SELECT 1 FROM projects WHERE id = ?", (pid,)
                    ):
                        raise RuleViolation(f"{member} {pid!r} names no project")
                if await tx.fetchall(
                    "SELECT 1 FROM project_relations WHERE source_id = ? AND target_id = ? "
                    "AND relation_type = ? AND valid_to IS NULL",
                    (source_id, target_id, relation_type),
                ):
                    raise Conflict(conflict)
                await tx.execute(
                    "INSERT INTO project_relations (id, source_id, target_id, relation_type, metadata, "
                    "valid_from, valid_to, created_at) VALUES (?, ?, ?, ?, ?, ?, NULL, ?)",
                    (
                        relation_id,
                        source_id,
                        target_id,
                        relation_type,
                        self.js(meta),
                        self.ts(start),
                        self.ts(now),
                    ),
                )
        except self.integrity_errors() as exc:
            raise Conflict(conflict) from exc
        return Relation(relation_id, source_id, target_id, relation_type, meta, start, None, now)

    async def get_relation(self, relation_id: str) -> Relation | None:
        if not is_uuid(relation_id):
            return None
        async with self._tx() as tx:
            recs = await tx.fetchall(f"{self._RELATION_SELECT} WHERE id = ?", (relation_id,))
        return self._relation(recs[0]) if recs else None

    def _valid_at(self, at: datetime | None) -> tuple[str, Any]:
        if at is None:
            return ("valid_to IS NULL", ())
        stamp = self.ts(at)
        return ("valid_from <= ? AND (valid_to IS NULL OR valid_to > ?)", (stamp, stamp))

    async def list_relations(self, project_id: str, *, at: datetime | None = None) -> list[Relation]:
        if not is_uuid(project_id):
            return []
        conds: list[tuple[str, Any]] = [("(source_id = ? OR target_id = ?)", (project_id, project_id))]
        if at is not None:
            conds.append(self._valid_at(at))
        where, params = where_clause(conds)
        async with self._tx() as tx:
            recs = await tx.fetchall(f"{self._RELATION_SELECT} WHERE {where} ORDER BY valid_from, id", params)
        return [self._relation(r) for r in recs]

    async def relations_at(
        self, at: datetime | None = None, *, relation_type: str | None = None
    ) -> list[Relation]:
        conds: list[tuple[str, Any]] = [self._valid_at(at)]
        if relation_type is not None:
            conds.append(("relation_type = ?", relation_type))
        where, params = where_clause(conds)
        async with self._tx() as tx:
            recs = await tx.fetchall(f"{self._RELATION_SELECT} WHERE {where} ORDER BY valid_from, id", params)
        return [self._relation(r) for r in recs]

    async def relations_between(
        self, start: datetime, end: datetime, *, relation_type: str
    ) -> list[Relation]:
        where = "relation_type = ? AND valid_from < ? AND (valid_to IS NULL OR valid_to > ?)"
        params = (relation_type, self.ts(end), self.ts(start))
        recs = await self._fetch(f"{self._RELATION_SELECT} WHERE {where} ORDER BY valid_from, id", params)
        return [self._relation(r) for r in recs]

    async def update_relation(
        self,
        relation_id: str,
        *,
        metadata: Mapping[str, Any] | None = None,
        valid_to: datetime | None = None,
    ) -> Relation | None:
        if not is_uuid(relation_id):
            return None
        sets: list[tuple[str, Any]] = []
        if metadata is not None:
            sets.append(("metadata = ?", self.js(dict(metadata))))
        if valid_to is not None:
            sets.append(("valid_to = ?", self.ts(valid_to)))
        if sets:
            async with self._tx() as tx:
                await tx.execute(
                    f"UPDATE project_relations SET {', '.join(s for s, _ in sets)} WHERE id = ?",
                    [*(v for _, v in sets), relation_id],
                )
        return await self.get_relation(relation_id)

    async def end_relation(self, relation_id: str, at: datetime | None = None) -> Relation | None:
        if not is_uuid(relation_id):
            return None
        async with self._tx() as tx:
            await tx.execute(
                "UPDATE project_relations SET valid_to = ? WHERE id = ? AND valid_to IS NULL",
                (self.ts(at if at is not None else utc_now()), relation_id),
            )
        return await self.get_relation(relation_id)
