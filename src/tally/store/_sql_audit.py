"""The rejected-events and audit-log part of the shared SQL.

A role of the store over the dialect seam (see ``_sql_dialect``). It owns the
rows written beside a batch (dead letters and audit entries, in the batch's
transaction) and their reads.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from tally.core import utc_now

from ._ids import is_uuid
from ._interface import AuditEntry, AuditRecord, DeadLetter, Page, RejectedEvent, RejectedKey, RuleViolation
from ._seam import Tx
from ._sql_dialect import SqlDialect
from ._sql_text import where_clause


class AuditSql:
    """Store methods of rejected events and the audit log; see the module docstring."""

    def __init__(self, sql: SqlDialect) -> None:
        # The seam's operations its statements call, bound once (no lookup through ``sql`` per call).
        self._tx = sql.tx
        self.from_js = sql.from_js
        self.from_ts = sql.from_ts
        self.js = sql.js
        self.ts = sql.ts

    async def write_extras(
        self, tx: Tx, dead_letters: Sequence[DeadLetter], audits: Sequence[AuditEntry], at: datetime
    ) -> None:
        """The dead letters and audit rows of a batch, in the batch's transaction."""
        if dead_letters:
            await tx.executemany(
                "INSERT INTO rejected_events (id, received_at, reason, raw) VALUES (?, ?, ?, ?)",
                [(str(uuid.uuid4()), self.ts(at), d.reason, self.js(d.raw)) for d in dead_letters],
            )
        if audits:
            await self.write_audits(tx, audits, at)

    async def list_rejected(
        self,
        *,
        start: datetime | None = None,
        end: datetime | None = None,
        limit: int = 100,
        after: RejectedKey | None = None,
    ) -> Page[RejectedEvent, RejectedKey]:
        conds: list[tuple[str, Any]] = []
        if start is not None:
            conds.append(("received_at >= ?", self.ts(start)))
        if end is not None:
            conds.append(("received_at < ?", self.ts(end)))
        if after is not None:
            if not is_uuid(after[1]):
                raise RuleViolation(f"rejected-event cursor id {after[1]!r} is not an id")
            conds.append(("(received_at, id) > (?, ?)", (self.ts(after[0]), after[1])))
        where, params = where_clause(conds)
        async with self._tx() as tx:
            recs = await tx.fetchall(
                f"SELECT id, received_at, reason, raw FROM rejected_events WHERE {where} "
                "ORDER BY received_at, id LIMIT ?",
                [*params, limit + 1],
            )
        items = [RejectedEvent(str(r[0]), self.from_ts(r[1]), r[2], self.from_js(r[3])) for r in recs[:limit]]
        return Page(items, (items[-1].received_at, items[-1].id) if len(recs) > limit else None)

    async def write_audits(self, tx: Tx, entries: Sequence[AuditEntry], at: datetime) -> None:
        await tx.executemany(
            "INSERT INTO audit_log (at, actor, action, object_type, object_id, details) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [
                (self.ts(at), e.actor, e.action, e.object_type, e.object_id, self.js(dict(e.details)))
                for e in entries
            ],
        )

    async def audit(self, entry: AuditEntry) -> None:
        async with self._tx() as tx:
            await self.write_audits(tx, [entry], utc_now())

    async def list_audit(self, *, action: str | None = None, limit: int = 100) -> list[AuditRecord]:
        where, params = where_clause([("action = ?", action)] if action is not None else [])
        async with self._tx() as tx:
            recs = await tx.fetchall(
                f"SELECT id, at, actor, action, object_type, object_id, details FROM audit_log WHERE {where} "
                "ORDER BY id DESC LIMIT ?",
                [*params, limit],
            )
        return [
            AuditRecord(int(r[0]), self.from_ts(r[1]), r[2], r[3], r[4], r[5], self.from_js(r[6]))
            for r in recs
        ]
