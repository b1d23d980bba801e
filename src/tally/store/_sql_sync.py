"""The reconciliation part of the shared SQL: sync runs, and the receipts of events a sync reads.

A role of the store over the dialect seam (see ``_sql_dialect``).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from tally.core import ResourceKey, utc_now

from ._ids import is_uuid
from ._interface import RuleViolation, StoreError, SyncReceipts, SyncStatus
from ._sql_dialect import SqlDialect
from ._sql_text import KEY_CHUNK, key_order, key_params
from ._stale_runs import fail_stale_sync_runs

_SYNC_RUN_COLUMNS = "id, cloud, started_at, completed_at, status, stats"


@lru_cache(maxsize=64)
def _receipts_by_key_sql(count: int) -> str:
    # Only a correction's payload is sent: it is the one that names a sync run.
    values = ", ".join("(?, ?, ?)" for _ in range(count))
    return (
        "SELECT t.cloud, t.resource_type, t.resource_id, t.received_at, "
        "CASE WHEN t.source = 'reconciliation' THEN t.payload END "
        f"FROM (VALUES {values}) AS k JOIN events AS t "
        "ON t.cloud = k.column1 AND t.resource_type = k.column2 AND t.resource_id = k.column3"
    )


class SyncRunsSql:
    """Store methods of sync runs and the receipts a sync reads; see the module docstring."""

    def __init__(self, sql: SqlDialect) -> None:
        # The seam's operations its statements call, bound once (no lookup through ``sql`` per call).
        self._tx = sql.tx
        self.from_js = sql.from_js
        self.from_opt_ts = sql.from_opt_ts
        self.from_ts = sql.from_ts
        self.js = sql.js
        self.ts = sql.ts
        self._sql = sql

    async def start_sync_run(self, cloud: str, started_at: datetime | None = None) -> str:
        run_id = str(uuid.uuid4())
        async with self._tx() as tx:
            await tx.execute(
                "INSERT INTO sync_runs (id, cloud, started_at, status, stats) VALUES (?, ?, ?, 'running', ?)",
                (run_id, cloud, self.ts(started_at if started_at is not None else utc_now()), self.js({})),
            )
        return run_id

    async def finish_sync_run(
        self, run_id: str, status: SyncStatus, stats: Mapping[str, Any], completed_at: datetime | None = None
    ) -> None:
        if status not in ("completed", "failed", "running"):
            raise RuleViolation(f"sync run status {status!r} is not one of running, completed, failed")
        if not is_uuid(run_id):
            raise StoreError(f"no sync run {run_id!r}")
        async with self._tx() as tx:
            count = await tx.execute(
                "UPDATE sync_runs SET status = ?, stats = ?, completed_at = ? WHERE id = ?",
                (status, self.js(dict(stats)), self.ts(completed_at or utc_now()), run_id),
            )
        if count == 0:
            raise StoreError(f"no sync run {run_id!r}")

    async def last_completed_sync_started_at(self, cloud: str) -> datetime | None:
        async with self._tx() as tx:
            recs = await tx.fetchall(
                "SELECT max(started_at) FROM sync_runs WHERE cloud = ? AND status = 'completed'", (cloud,)
            )
        return self.from_opt_ts(recs[0][0]) if recs else None

    async def fail_stale_sync_runs(self, cloud: str, at: datetime | None = None) -> list[str]:
        return await fail_stale_sync_runs(self._sql, cloud, at if at is not None else utc_now())

    async def get_sync_run(self, run_id: str) -> dict[str, Any] | None:
        if not is_uuid(run_id):
            return None
        async with self._tx() as tx:
            recs = await tx.fetchall(f"SELECT {_SYNC_RUN_COLUMNS} FROM sync_runs WHERE id = ?", (run_id,))
        return self._sync_run(recs[0]) if recs else None

    async def list_sync_runs(self, cloud: str) -> list[dict[str, Any]]:
        async with self._tx() as tx:
            recs = await tx.fetchall(
                f"SELECT {_SYNC_RUN_COLUMNS} FROM sync_runs WHERE cloud = ? "
                "ORDER BY started_at, completed_at NULLS LAST",
                (cloud,),
            )
        return [self._sync_run(r) for r in recs]

    async def sync_runs_between(
        self, cloud: str, after: datetime, before: datetime, *, limit: int | None = None
    ) -> list[dict[str, Any]]:
        params: list[Any] = [cloud, self.ts(after), self.ts(before)]
        if limit is not None:
            params.append(limit)
        async with self._tx() as tx:
            recs = await tx.fetchall(
                f"SELECT {_SYNC_RUN_COLUMNS} FROM sync_runs WHERE cloud = ? AND started_at > ? "
                "AND started_at < ? ORDER BY started_at, completed_at NULLS LAST"
                + (" LIMIT ?" if limit is not None else ""),
                params,
            )
        return [self._sync_run(r) for r in recs]

    async def newest_receipt(self) -> datetime | None:
        # Over every cloud rather than one: events_received_idx answers it with one probe, and a newer
        # receipt only makes a reader assume a run held more rows than it did.
        async with self._tx() as tx:
            recs = await tx.fetchall("SELECT max(received_at) FROM events")
        return self.from_opt_ts(recs[0][0]) if recs else None

    async def sync_receipts(self, keys: Sequence[ResourceKey]) -> dict[ResourceKey, SyncReceipts]:
        first: dict[ResourceKey, datetime] = {}
        runs: defaultdict[ResourceKey, set[str]] = defaultdict(set)
        ordered = sorted(set(keys), key=key_order)
        async with self._tx() as tx:
            for start in range(0, len(ordered), KEY_CHUNK):
                chunk = ordered[start : start + KEY_CHUNK]
                recs = await tx.fetchall(_receipts_by_key_sql(len(chunk)), key_params(chunk))
                for cloud, resource_type, resource_id, received_at, payload in recs:
                    key = ResourceKey(cloud, resource_type, resource_id)
                    at = self.from_ts(received_at)
                    if key not in first or at < first[key]:
                        first[key] = at
                    provider = self.from_js(payload).get("provider") if payload is not None else None
                    if isinstance(provider, Mapping) and isinstance(provider.get("sync_run_id"), str):
                        runs[key].add(provider["sync_run_id"])
        return {key: SyncReceipts(at, frozenset(runs.get(key, ()))) for key, at in first.items()}

    async def late_keys(
        self,
        cloud: str,
        received_after: datetime,
        dated_before: datetime,
        *,
        except_types: Sequence[str] = (),
    ) -> list[ResourceKey]:
        # events_received_idx bounds the scan to what arrived since ``received_after``.
        excluded = sorted(set(except_types))
        not_in = f" AND event_type NOT IN ({', '.join('?' for _ in excluded)})" if excluded else ""
        async with self._tx() as tx:
            recs = await tx.fetchall(
                "SELECT DISTINCT resource_type, resource_id FROM events WHERE received_at > ? "
                f"AND cloud = ? AND timestamp < ?{not_in} ORDER BY resource_type, resource_id",
                [self.ts(received_after), cloud, self.ts(dated_before), *excluded],
            )
        return [ResourceKey(cloud, t, i) for t, i in recs]

    def _sync_run(self, r: Sequence[Any]) -> dict[str, Any]:
        return {
            "id": str(r[0]),
            "cloud": r[1],
            "started_at": self.from_ts(r[2]),
            "completed_at": self.from_opt_ts(r[3]),
            "status": r[4],
            "stats": self.from_js(r[5]),
        }
