"""What a run does first once it holds its cloud's lock: take over from a holder that stopped, and
(scheduled runs only) step aside when another replica synced the cloud within the interval.

Replicas share one database and one clouds config, so every replica schedules every cloud. The lock
keeps their runs apart, but alone it does not keep them few: three replicas ticking once an interval
each, at phases the jitter spreads, would sync each cloud three times an interval. So a scheduled
run, under the lock, first asks whether a run of the cloud that *ended* started less than
``min_gap_s`` ago (``is_due``); if so it is skipped, counted as ``skipped`` like a run that found the
lock held. The gap is the interval less twice the jitter: a replica's own next tick comes at least
``interval × (1 − jitter)`` after its last one, so a single daemon never skips its own cadence, and
across replicas consecutive runs are between ``min_gap_s`` and ``interval × (1 + jitter)`` apart.
A run on request (``POST /internal/sync``, ``tally sync``) always runs.

A row a stopped holder left ``running`` counts for nothing: it is failed here (the store's
``fail_stale_sync_runs``) with no ``completed_at``, so the next tick of any replica syncs the cloud.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

from . import _metrics
from ._clock import after_newer_runs

log = logging.getLogger(__name__)


class HandoverStore(Protocol):
    """The store methods of a handover (``tally.store.Store`` provides them)."""

    async def fail_stale_sync_runs(self, cloud: str, at: datetime | None = None) -> list[str]: ...
    async def sync_runs_between(
        self, cloud: str, after: datetime, before: datetime, *, limit: int | None = None
    ) -> list[dict[str, Any]]: ...


def is_due(runs: Iterable[Mapping[str, Any]], now: datetime, min_gap_s: float) -> bool:
    """False when one of ``runs`` (shaped as ``Store.get_sync_run`` answers) ended and started less
    than ``min_gap_s`` from ``now``, on either side (a replica whose clock runs ahead dates its runs
    in this one's future); a run without ``completed_at`` never ended and does not count."""
    gap = timedelta(seconds=min_gap_s)
    return not any(r["completed_at"] is not None and abs(r["started_at"] - now) < gap for r in runs)


async def take_over(store: HandoverStore, cloud: str) -> None:
    """Fail the rows of ``cloud`` a stopped holder left running; the caller holds the cloud's lock."""
    for run_id in await store.fail_stale_sync_runs(cloud):
        # Its replica never counted it: it is counted here, once, by the run that found it.
        _metrics.SYNC_RUNS.labels(cloud, "failed").inc()
        log.warning(
            "stale sync run failed cloud=%s sync_run_id=%s reason=its replica stopped before it ended",
            cloud,
            run_id,
        )


async def ran_recently(store: HandoverStore, cloud: str, now: datetime, min_gap_s: float) -> bool:
    """True when ``cloud`` was synced within ``min_gap_s`` of ``now`` (see ``is_due``)."""
    gap = timedelta(seconds=min_gap_s)
    return not is_due(await store.sync_runs_between(cloud, now - gap, now + gap), now, min_gap_s)


async def admit(
    store: HandoverStore, cloud: str, wall_or_told: datetime, *, dated_by_wall: bool, min_gap_s: float | None
) -> datetime | None:
    """What a run does first under its cloud's lock: its instant (a wall clock's dated after the cloud's
    newest run, ``_clock.after_newer_runs``; a told one kept), having taken over from a stopped holder;
    None when, with ``min_gap_s`` (a scheduled run's), the cloud was synced within it (not due)."""
    poll_at = await after_newer_runs(store, cloud, wall_or_told) if dated_by_wall else wall_or_told
    await take_over(store, cloud)
    if min_gap_s is not None and await ran_recently(store, cloud, poll_at, min_gap_s):
        return None
    return poll_at
