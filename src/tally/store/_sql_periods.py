"""The billing periods part of the shared SQL: closed periods and their frozen lines.

A role of the store over the dialect seam (see ``_sql_dialect``). The freeze itself is the
database's: triggers of migration 0012 refuse any update or delete of a period or a line on both
backends, but for a correction line's ``delivered_at``, set once. These methods only insert, read,
and set that instant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from tally.core import format_instant

from ._interface import BillingPeriod, Conflict, PeriodLine
from ._sql_dialect import SqlDialect

_PERIOD = "SELECT cloud, period_start, period_end, price_list, closed_at FROM billing_periods"
_LINE = "SELECT seq, kind, line, reason, sync_run, recorded_at, delivered_at FROM period_lines"
_INSERT_LINE = (
    "INSERT INTO period_lines (cloud, period_start, seq, kind, line, reason, sync_run, recorded_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


class PeriodsSql:
    """Store methods of billing periods; see the module docstring."""

    def __init__(self, sql: SqlDialect) -> None:
        # The seam's operations its statements call, bound once (no lookup through ``sql`` per call).
        self._fetch = sql.fetch
        self._tx = sql.tx
        self.from_js = sql.from_js
        self.from_ts = sql.from_ts
        self.js = sql.js
        self.ts = sql.ts

    def _period(self, rec: Sequence[Any]) -> BillingPeriod:
        return BillingPeriod(rec[0], self.from_ts(rec[1]), self.from_ts(rec[2]), rec[3], self.from_ts(rec[4]))

    async def close_period(self, period: BillingPeriod, lines: Sequence[Mapping[str, Any]]) -> None:
        start, closed = self.ts(period.period_start), self.ts(period.closed_at)
        async with self._tx() as tx:
            found = await tx.fetchall(
                "SELECT closed_at FROM billing_periods WHERE cloud = ? AND period_start = ?",
                (period.cloud, start),
            )
            if found:
                raise Conflict(
                    f"the period of cloud {period.cloud} from {format_instant(period.period_start)} "
                    f"is already closed (at {format_instant(self.from_ts(found[0][0]))})"
                )
            await tx.execute(
                "INSERT INTO billing_periods (cloud, period_start, period_end, price_list, closed_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (period.cloud, start, self.ts(period.period_end), period.price_list, closed),
            )
            rows = [
                (period.cloud, start, seq, "closed", self.js(dict(line)), None, None, closed)
                for seq, line in enumerate(lines, start=1)
            ]
            if rows:
                await tx.executemany(_INSERT_LINE, rows)

    async def get_period(self, cloud: str, period_start: datetime) -> BillingPeriod | None:
        recs = await self._fetch(
            f"{_PERIOD} WHERE cloud = ? AND period_start = ?", (cloud, self.ts(period_start))
        )
        return self._period(recs[0]) if recs else None

    async def list_periods(self, cloud: str | None = None) -> list[BillingPeriod]:
        if cloud is None:
            recs = await self._fetch(f"{_PERIOD} ORDER BY cloud, period_start")
        else:
            recs = await self._fetch(f"{_PERIOD} WHERE cloud = ? ORDER BY period_start", (cloud,))
        return [self._period(r) for r in recs]

    async def period_lines(self, cloud: str, period_start: datetime) -> list[PeriodLine]:
        recs = await self._fetch(
            f"{_LINE} WHERE cloud = ? AND period_start = ? ORDER BY seq", (cloud, self.ts(period_start))
        )
        return [
            PeriodLine(
                r[0],
                r[1],
                self.from_js(r[2]),
                r[3],
                r[4],
                self.from_ts(r[5]),
                None if r[6] is None else self.from_ts(r[6]),
            )
            for r in recs
        ]

    async def add_period_corrections(
        self,
        cloud: str,
        period_start: datetime,
        lines: Sequence[Mapping[str, Any]],
        *,
        reason: str,
        sync_run: str | None,
        at: datetime,
    ) -> int:
        start = self.ts(period_start)
        async with self._tx() as tx:
            last = await tx.fetchall(
                "SELECT COALESCE(MAX(seq), 0) FROM period_lines WHERE cloud = ? AND period_start = ?",
                (cloud, start),
            )
            first = int(last[0][0]) + 1
            rows = [
                (cloud, start, seq, "correction", self.js(dict(line)), reason, sync_run, self.ts(at))
                for seq, line in enumerate(lines, start=first)
            ]
            if rows:
                await tx.executemany(_INSERT_LINE, rows)
        return len(lines)

    async def deliver_corrections(
        self, cloud: str, period_start: datetime, seqs: Sequence[int], at: datetime
    ) -> None:
        async with self._tx() as tx:
            await tx.executemany(
                "UPDATE period_lines SET delivered_at = ? WHERE cloud = ? AND period_start = ? AND seq = ? "
                "AND kind = 'correction'",
                [(self.ts(at), cloud, self.ts(period_start), seq) for seq in seqs],
            )
