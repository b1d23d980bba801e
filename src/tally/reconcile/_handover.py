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

A run that finds the lock held is skipped; from the ``LOCK_HELD_WARN_AFTER``-th in a row of a cloud
each skip is a warning, and ``tally_sync_lock_held_runs`` counts them (a sync that long, or a holder
that hangs until its lease ends).

A row a stopped holder left ``running`` counts for nothing: it is failed here (the store's
``fail_stale_sync_runs``) with no ``completed_at``, so the next tick of any replica syncs the cloud.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

from . import _metrics

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


# Runs of a cloud skipped in a row for a held lock, by cloud; gone once a run of it takes the lock.
_held_in_a_row: dict[str, int] = {}
#: From this many in a row, each skip is a warning: a sync that long, or a holder that hangs.
LOCK_HELD_WARN_AFTER = 3


def lock_taken(cloud: str) -> None:
    """A run of ``cloud`` holds its lock: the skips in a row start from zero."""
    _held_in_a_row.pop(cloud, None)
    _metrics.LOCK_HELD_RUNS.labels(cloud).set(0)


def lock_held(cloud: str) -> None:
    """A run of ``cloud`` found its lock held and is skipped: counted, and said (see the docstring)."""
    skipped = _held_in_a_row[cloud] = _held_in_a_row.get(cloud, 0) + 1
    _metrics.LOCK_HELD_RUNS.labels(cloud).set(skipped)
    if skipped < LOCK_HELD_WARN_AFTER:
        log.info("sync lock held cloud=%s", cloud)
        return
    log.warning(
        "sync lock held cloud=%s skipped_in_a_row=%d: another session holds the cloud's lock; a hung "
        "holder loses it when its lease ends",
        cloud,
        skipped,
    )
