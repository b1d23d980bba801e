"""The reconciliation's metrics, defined once on the default registry.

Label sets are fixed; each cloud's children are created at zero when the
service learns the cloud, so a rate over them is defined from the first scrape.
The last completed run is restored from ``sync_runs`` when the service starts
(``restore_completed``), so a restart does not reset the stale-sync alert's clock.
"""

from __future__ import annotations

import time

from prometheus_client import Counter, Gauge, Histogram

from ._model import Deferral, Kind

SYNC_RUNS = Counter(
    "tally_sync_runs", "Sync runs by outcome (completed, failed, skipped).", ["cloud", "status"]
)
RECONCILED = Counter(
    "tally_sync_resources_reconciled",
    "Corrections booked, by action (created, updated, deleted).",
    ["cloud", "action"],
)
SYNC_ERRORS = Counter("tally_sync_errors", "Errors recorded in sync runs' stats.errors.", ["cloud"])
DEFERRED = Counter(
    "tally_sync_resources_deferred",
    "Corrections left to a later run, by reason (transitional, recent).",
    ["cloud", "reason"],
)
SYNC_DURATION = Histogram(
    "tally_sync_duration_seconds",
    "Wall-clock time of a sync run from its lock to its recorded row, by outcome (completed, failed).",
    ["cloud", "status"],
    # Around the default 45 s budget, where "close to the budget" must be readable.
    buckets=(0.5, 1, 2.5, 5, 10, 20, 30, 40, 45, 60, 90, 120, 300, 900, 3600),
)
SYNC_BUDGET = Gauge(
    "tally_sync_budget_seconds",
    "TALLY_REPORTING_SYNC_BUDGET_S: a run still working then ends failed (the near-budget alert reads it).",
)
LAST_COMPLETED = Gauge(
    "tally_sync_last_completed_timestamp_seconds",
    "Wall-clock instant the cloud's last completed run finished (0 until one has).",
    ["cloud"],
)
LAST_COMPLETED_AGE = Gauge(
    "tally_sync_last_completed_age_seconds",
    "Seconds since the cloud's last completed run finished (as sync_runs records it), "
    "or since this process started if none has.",
    ["cloud"],
)
CONFIG_INVALID = Gauge(
    "tally_sync_cloud_config_invalid",
    "1 when the cloud's clouds config entry was refused at startup (its runs fail until it is fixed).",
    ["cloud"],
)

LAST_ERROR = Gauge(
    "tally_sync_last_error_timestamp_seconds",
    "Wall-clock instant the cloud's last failed run ended, or its last run that waited past its budget "
    "for a slot or a connection gave up (0 until one has); above the last completed one: the cloud fails.",
    ["cloud"],
)
LOCK_HELD_SECONDS = Gauge(
    "tally_sync_lock_held_seconds",
    "How long this replica's scheduled runs of the cloud have found its sync lock held by another run, "
    "run after run (0 once one of them takes it). A live holder runs within its budget and a hung one "
    "loses its lease, so a figure past both is a holder nothing frees.",
    ["cloud"],
)
IN_PROGRESS = Gauge(
    "tally_sync_runs_in_progress", "Sync runs of this process holding a slot (at most the cap)."
)
MAX_CONCURRENT = Gauge(
    "tally_sync_max_concurrent",
    "The cap on concurrent sync runs in force (TALLY_REPORTING_SYNC_MAX_CONCURRENT).",
)
SLOT_WAIT = Histogram(
    "tally_sync_slot_wait_seconds",
    "Time a sync run waited for a slot under the cap; it counts against the run's budget.",
    buckets=(0.01, 0.1, 0.5, 1, 2.5, 5, 10, 20, 30, 45, 60, 120, 300),
)
WAITS_EXCEEDED = Counter(
    "tally_sync_waits_exceeded",
    "Runs that did not start: they waited their whole budget for a sync slot or a database connection.",
    ["wait"],
)
for _wait in ("slot", "connection"):
    WAITS_EXCEEDED.labels(_wait)

ACTIONS = {Kind.CREATE: "created", Kind.UPDATE: "updated", Kind.DELETE: "deleted"}
_STARTED = time.time()
# Invariant: holds a cloud only once one of its runs completed (in this process, or restored from the store).
_finished: dict[str, float] = {}


def mark_completed(cloud: str, finished_at: float | None = None) -> None:
    """Record that a run of ``cloud`` completed at ``finished_at`` (Unix time; default now, the wall
    clock whatever instant the run was told); an older instant than the one held never moves it back."""
    instant = time.time() if finished_at is None else finished_at
    if instant >= _finished.get(cloud, 0.0):
        _finished[cloud] = instant
        LAST_COMPLETED.labels(cloud).set(instant)


def mark_error(cloud: str, at: float) -> None:
    """Record that a run of ``cloud`` failed (or gave up waiting) at ``at`` (Unix time)."""
    LAST_ERROR.labels(cloud).set(at)


def init_cloud(cloud: str) -> None:
    """Create the cloud's children at zero and the age gauge's reader."""
    for status in ("completed", "failed", "skipped"):
        SYNC_RUNS.labels(cloud, status)
    for action in ACTIONS.values():
        RECONCILED.labels(cloud, action)
    SYNC_ERRORS.labels(cloud)
    for reason in Deferral:
        DEFERRED.labels(cloud, reason.value)
    LAST_COMPLETED.labels(cloud)
    LAST_ERROR.labels(cloud)
    CONFIG_INVALID.labels(cloud)
    LOCK_HELD_SECONDS.labels(cloud)
    for status in ("completed", "failed"):
        SYNC_DURATION.labels(cloud, status)

    def age() -> float:
        return time.time() - _finished.get(cloud, _STARTED)

    LAST_COMPLETED_AGE.labels(cloud).set_function(age)
