"""The events upkeep as the daemon and ``tally migrate`` call it: partitions ahead, then retention.

Each step is its own transaction under the maintenance lock (``_partitions.MAINTENANCE_LOCK``), so a
replica that finds it held skips the round, and one long retirement never holds the partitions of
the coming months back. On SQLite, and on PostgreSQL before migration 0010, there is nothing to keep:
every call answers None.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from tally.core import utc_now

from ._interface import Store
from ._partitions import (
    EnsureOutcome,
    PartitionStats,
    attached_months,
    ensure_partitions,
    is_partitioned,
    partition_stats,
    take_maintenance_lock,
)
from ._postgres import PostgresDialect
from ._retention import (
    ArchivedLines,
    RetentionPolicy,
    RetiredMonth,
    archived_usage,
    months_to_retire,
    retention_boundary,
    retention_refusal,
    retire_month,
)
from ._sql import SqlStore

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class UpkeepOutcome:
    """One round: what was made, what was retired, why retention did not run (``refused``), whether
    another replica held the lock (``skipped``), and the counts after the round."""

    ensured: EnsureOutcome
    retired: tuple[RetiredMonth, ...]
    refused: str | None
    skipped: bool
    stats: PartitionStats


async def _partitioned(store: Store) -> PostgresDialect | None:
    """The store's PostgreSQL dialect when its events table is partitioned."""
    if not isinstance(store, SqlStore) or not isinstance(store.seam, PostgresDialect):
        return None
    pg = store.seam
    async with pg.tx() as tx:
        return pg if await is_partitioned(tx) else None


async def maintain_events(
    store: Store, *, ahead: int, policy: RetentionPolicy, now: datetime | None = None
) -> UpkeepOutcome | None:
    """Make the coming months' partitions, then retire what ``policy`` retires (unless refused)."""
    pg = await _partitioned(store)
    if pg is None:
        return None
    at = now if now is not None else utc_now()
    async with pg.tx() as tx:
        if not await take_maintenance_lock(tx):
            return UpkeepOutcome(EnsureOutcome(skipped=True), (), None, True, await partition_stats(tx))
        ensured = await ensure_partitions(tx, at, ahead)
    refused: str | None = None
    retired: list[RetiredMonth] = []
    if policy.months is not None:
        boundary = retention_boundary(at, policy.months)
        while True:
            # One month per transaction, oldest first: a crash leaves whole months retired or not.
            async with pg.tx() as tx:
                if not await take_maintenance_lock(tx):
                    break
                refused = await retention_refusal(tx, policy, at)
                if refused is not None:
                    log.warning("events retention refused: %s", refused)
                    break
                due = months_to_retire(await attached_months(tx), boundary)
                if not due:
                    break
                retired.append(await retire_month(pg, tx, due[0], drop=policy.drop))
    async with pg.tx() as tx:
        stats = await partition_stats(tx)
    return UpkeepOutcome(ensured, tuple(retired), refused, False, stats)


async def events_retention_refusal(
    store: Store, policy: RetentionPolicy, now: datetime | None = None
) -> str | None:
    """Why ``policy`` must not run on ``store`` (checked before the daemon starts), or None."""
    pg = await _partitioned(store)
    if pg is None or policy.months is None:
        return None
    async with pg.tx() as tx:
        return await retention_refusal(tx, policy, now if now is not None else utc_now())


async def events_partition_stats(store: Store) -> PartitionStats | None:
    pg = await _partitioned(store)
    if pg is None:
        return None
    async with pg.tx() as tx:
        return await partition_stats(tx)


async def archived_month_usage(store: Store, month: datetime, *, cloud: str | None = None) -> ArchivedLines:
    """The usage a retired month had, per resource (empty for a month never retired, and on SQLite)."""
    pg = await _partitioned(store)
    if pg is None:
        return {}
    async with pg.tx() as tx:
        return await archived_usage(tx, month, cloud=cloud)
