"""One sync run of one cloud: lock, record, observe, name sizes, diff, book, record.

The order of work, and why:

0. Take a sync slot (``slots``, ``TALLY_REPORTING_SYNC_MAX_CONCURRENT``): the budget starts here, so
   the wait for a slot counts against it, and so does every wait for a pooled database connection
   after it (``tally.store.connection_deadline``). A run that gets no slot, or no connection to record
   itself, within its budget ends ``not started`` with the wait named, and writes no row.
1. Read the run's one clock: the told instant, else the wall clock read once (watched for steps,
   ``_clock``).
2. Take the cloud's lock in the database (held: answer "lock held", write nothing). Holding it,
   date a run of the wall clock no earlier than just after the cloud's newest run (a clock that went
   back never dates a run before one already recorded), fail the rows a stopped holder left running
   and, for a scheduled run, skip ("not due", write nothing) if another replica synced the cloud
   within the interval (``_handover``).
3. Read the bound (last completed run's started_at) *before* inserting this run's
   row, then insert the row with started_at = the run's instant.
4. Under the budget: observe (adapter), list the size names, read the rows, diff,
   book through the ingest pipeline. The rows are read after the listing: an
   event delivered in between is then in the rows, and the recent rule covers it.
   Once the rows are read the run records the store's newest event receipt, so a
   later run can tell which rows this one held; the deletes by absence are then
   dated from the record of the earlier runs (``absence_delete_instant``), and a late
   event behind an earlier run that vouched for a row is corrected back to what that
   run listed (``vouched_restore``).
5. Record the row: completed when no error was recorded, else failed. A run
   cancelled from outside (the client went away, shutdown) is recorded failed
   under a shield and the cancellation goes on. Recording is not the run's work:
   its connection waits get ``FINISH_GRACE_S`` past the budget (within the
   route's hold of budget + 15 s), so a run at its budget still leaves its row.

A failed run keeps the corrections it booked and never moves the bound, because
only completed runs count for it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import anyio

from tally.actors import Budget, BudgetExceeded
from tally.config import CloudEntry
from tally.core import format_instant, utc_now
from tally.store import (
    ConnectionWaits,
    ConnectionWaitTimeout,
    SizeName,
    StoreUnavailable,
    SyncLockHeld,
    SyncRow,
    connection_deadline,
)

from . import _metrics
from ._adapter import Adapter, ObserveRequest, Progress
from ._booking import IngestsEvents, book
from ._clock import WALL_CLOCK, after_newer_runs
from ._diff import diff
from ._errors import RunAborted
from ._handover import ran_recently, take_over
from ._model import Deferral, DeferredCorrection, Kind, Plan, SyncOutcome
from ._model import Status as RunStatus
from ._names import learn_size_names
from ._record_reads import RecordReader, date_absence_from_record, restore_vouched_from_record
from ._rules import cap_errors, deleted_servers_window

log = logging.getLogger(__name__)

FINISH_GRACE_S = 10.0


class SyncStore(RecordReader, Protocol):
    """The store methods a run uses (``tally.store.Store`` provides them): the planning passes' reads
    and these."""

    async def sync_rows(self, cloud: str, resource_type: str) -> list[SyncRow]: ...
    async def learn_size_names(self, cloud: str, rows: Sequence[SizeName]) -> list[SizeName]: ...
    async def start_sync_run(self, cloud: str, started_at: datetime | None = None) -> str: ...
    async def finish_sync_run(
        self, run_id: str, status: Any, stats: Any, completed_at: datetime | None = None
    ) -> None: ...
    async def last_completed_sync_started_at(self, cloud: str) -> datetime | None: ...
    async def fail_stale_sync_runs(self, cloud: str, at: datetime | None = None) -> list[str]: ...
    async def list_sync_runs(self, cloud: str) -> list[dict[str, Any]]: ...
    async def newest_receipt(self) -> datetime | None: ...
    def sync_lock(self, cloud: str) -> Any: ...


@dataclass(slots=True)
class RunStats:
    """The stats document of a sync_runs row, built up as the run goes."""

    created: int = 0
    updated: int = 0
    deleted: int = 0
    errors: list[str] = field(default_factory=list)
    deferred: dict[Deferral, int] = field(default_factory=lambda: {d: 0 for d in Deferral})
    # Which corrections were deferred, by resource, and which types were listed to the end: what a later
    # reader (the compare, the absence pass) needs to tell which run could have booked a correction.
    deferred_corrections: list[DeferredCorrection] = field(default_factory=list)
    complete_types: list[str] = field(default_factory=list)
    # The store's newest event receipt once the run had read the rows (None: no event yet); written only
    # by a run that read them, so a reader can tell "held no row" from "did not record".
    rows_read: bool = False
    rows_read_through: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        document = {
            "created": self.created,
            "updated": self.updated,
            "deleted": self.deleted,
            "errors": cap_errors(self.errors),
            "error_count": len(self.errors),
            "deferred": {d.value: self.deferred[d] for d in Deferral},
            "deferred_resources": [d.to_json() for d in self.deferred_corrections],
            "complete_types": self.complete_types,
        }
        if self.rows_read:
            through = self.rows_read_through
            document["rows_read_through"] = format_instant(through) if through is not None else None
        return document


@dataclass(frozen=True, slots=True)
class RunSettings:
    """The settings every run of a deployment shares."""

    settle_s: int = 60
    budget_s: float = 45.0


async def run_sync(
    entry: CloudEntry,
    *,
    store: SyncStore,
    pipeline: IngestsEvents,
    open_adapter: Callable[[CloudEntry], Adapter],
    settings: RunSettings,
    at: datetime | None = None,
    config_error: str | None = None,
    slots: anyio.CapacityLimiter | None = None,
    min_gap_s: float | None = None,
) -> SyncOutcome:
    """Run one sync of ``entry`` (see the module docstring); never raises for a failed run.

    ``config_error`` is the reason the entry's adapter_config was refused at
    startup: the run then records it and ends failed before anything is observed.
    ``slots`` caps the runs of the process (None: no cap).
    ``min_gap_s`` (a scheduled run's) skips the run when a run of the cloud that
    ended started that close to this one's instant (``_handover.is_due``).
    """
    cloud = entry.cloud
    began = time.monotonic()
    with connection_deadline(began + settings.budget_s) as waits:
        if slots is not None:
            with anyio.move_on_after(settings.budget_s) as waiting:
                await slots.acquire()
            if waiting.cancelled_caught:
                return _not_started(
                    cloud,
                    "slot",
                    f"waited the whole budget of {settings.budget_s:g} s for a sync slot: all "
                    f"{slots.total_tokens:g} of TALLY_REPORTING_SYNC_MAX_CONCURRENT were running",
                )
        slot_wait = time.monotonic() - began
        _metrics.SLOT_WAIT.observe(slot_wait)
        _metrics.IN_PROGRESS.inc()
        try:
            poll_at = at if at is not None else WALL_CLOCK.now()
            async with store.sync_lock(cloud):
                if at is None:
                    poll_at = await after_newer_runs(store, cloud, poll_at)
                await take_over(store, cloud)
                if min_gap_s is not None and await ran_recently(store, cloud, poll_at, min_gap_s):
                    _metrics.SYNC_RUNS.labels(cloud, "skipped").inc()
                    log.info("sync not due cloud=%s reason=synced within min_gap_s=%g", cloud, min_gap_s)
                    return SyncOutcome(RunStatus.NOT_DUE, cloud)
                return await _locked_run(
                    entry,
                    store,
                    pipeline,
                    open_adapter,
                    settings,
                    poll_at,
                    config_error,
                    began,
                    slot_wait,
                    waits,
                    dated_by_wall=at is None,
                )
        except SyncLockHeld:
            _metrics.SYNC_RUNS.labels(cloud, "skipped").inc()
            log.info("sync lock held cloud=%s", cloud)
            return SyncOutcome(RunStatus.LOCK_HELD, cloud)
        except ConnectionWaitTimeout as exc:
            # Raised outside the run's work: taking over, reading the bound or inserting the row (no row
            # then).
            return _not_started(cloud, "connection", f"no database connection within the budget: {exc}")
        except StoreUnavailable as exc:
            # The database went away (a restart, a failover) before the run had its row: no connection
            # for the lock, or one lost while taking over or inserting the row. Nothing to record.
            return _database_away(cloud, str(exc))
        finally:
            _metrics.IN_PROGRESS.dec()
            if slots is not None:
                slots.release()


DATABASE_AWAY = "the database does not answer"


def _database_away(cloud: str, detail: str) -> SyncOutcome:
    """Not started; the outcome's reason (a request's 503, the cloud's health) without the database's
    address, the log line with the error."""
    _metrics.SYNC_RUNS.labels(cloud, "skipped").inc()
    log.warning("sync not started cloud=%s reason=%s: %s", cloud, DATABASE_AWAY, detail)
    return SyncOutcome(RunStatus.NOT_STARTED, cloud, None, {"errors": [DATABASE_AWAY], "error_count": 1})


def _not_started(cloud: str, wait: str, reason: str) -> SyncOutcome:
    _metrics.SYNC_RUNS.labels(cloud, "skipped").inc()
    _metrics.WAITS_EXCEEDED.labels(wait).inc()
    log.warning("sync not started cloud=%s wait=%s reason=%s", cloud, wait, reason)
    return SyncOutcome(RunStatus.NOT_STARTED, cloud, None, {"errors": [reason], "error_count": 1})


async def _locked_run(
    entry: CloudEntry,
    store: SyncStore,
    pipeline: IngestsEvents,
    open_adapter: Callable[[CloudEntry], Adapter],
    settings: RunSettings,
    poll_at: datetime,
    config_error: str | None,
    began: float,
    slot_wait: float,
    waits: ConnectionWaits,
    *,
    dated_by_wall: bool,
) -> SyncOutcome:
    """The run once it holds its slot and its lock; ``began`` is when it asked for the slot;
    ``dated_by_wall``: ``poll_at`` is the wall clock's (its end is then recorded no earlier)."""
    cloud = entry.cloud
    bound = await store.last_completed_sync_started_at(cloud)
    run_id = await store.start_sync_run(cloud, poll_at)
    log.info(
        "sync started cloud=%s sync_run_id=%s at=%s bound=%s slot_wait_s=%.3f",
        cloud,
        run_id,
        poll_at.isoformat(),
        bound,
        slot_wait,
    )
    stats = RunStats()
    progress = Progress()
    # What is left of the budget once the slot, the lock and the row were had; never zero, so that a run
    # whose waits took it all ends at once with the deadline error rather than a refusal of the Budget.
    worked_from = time.monotonic()
    remaining = max(settings.budget_s - (worked_from - began), 0.001)
    try:
        try:
            with Budget(remaining):
                if config_error is not None:
                    raise RunAborted(config_error)
                await _work(
                    entry, store, pipeline, open_adapter, settings, poll_at, bound, run_id, stats, progress
                )
        except BudgetExceeded:
            if waits.waiting:
                stats.errors.append(
                    f"the run of {cloud} reached its budget of {settings.budget_s:g} s waiting for a "
                    f"database connection (TALLY_REPORTING_DB_MAX_CONNS) while {progress.current()}"
                )
            else:
                stats.errors.extend(
                    f"listing the resources of {cloud}: the run ended while {doing}: "
                    "context deadline exceeded"
                    for doing in progress.running()
                )
        except RunAborted as exc:
            stats.errors.append(str(exc))
        except Exception as exc:
            # Our side broke (the store, the pipeline), no connection came free within the budget
            # (ConnectionWaitTimeout names that wait) or the database went away (StoreUnavailable, of
            # which that is one; no traceback for either): still a recorded failure, never a silent one.
            if not isinstance(exc, StoreUnavailable):
                log.exception("sync crashed cloud=%s sync_run_id=%s", cloud, run_id)
            stats.errors.append(f"the run of {cloud} failed while {progress.current()}: {exc}")
    except BaseException:
        stats.errors.append(f"the run of {cloud} was cancelled while {progress.current()}")
        with anyio.CancelScope(shield=True):
            await _finish(store, cloud, run_id, stats, worked_from, poll_at if dated_by_wall else None)
        raise
    return await _finish(store, cloud, run_id, stats, worked_from, poll_at if dated_by_wall else None)


async def _finish(
    store: SyncStore, cloud: str, run_id: str, stats: RunStats, began: float, not_before: datetime | None
) -> SyncOutcome:
    status = RunStatus.FAILED if stats.errors else RunStatus.COMPLETED
    document = stats.to_json()
    # A run the wall clock dated after its cloud's newest run (the clock went back) ends no earlier.
    completed_at = utc_now() if not_before is None else max(utc_now(), not_before)
    try:
        with connection_deadline(time.monotonic() + FINISH_GRACE_S):
            await store.finish_sync_run(run_id, status.value, document, completed_at)
    except StoreUnavailable as exc:
        # The database is away (or no connection came within the grace): the row stays running, and
        # the next run that takes the cloud's lock fails it as one whose holder stopped.
        stats.errors.append(f"the end of the run of {cloud} could not be recorded: {exc}")
        log.warning(
            "sync end not recorded cloud=%s sync_run_id=%s status=%s reason=%s",
            cloud,
            run_id,
            status.value,
            exc,
        )
        status, document = RunStatus.FAILED, stats.to_json()
    _metrics.SYNC_RUNS.labels(cloud, status.value).inc()
    _metrics.SYNC_DURATION.labels(cloud, status.value).observe(time.monotonic() - began)
    if stats.errors:
        _metrics.SYNC_ERRORS.labels(cloud).inc(len(stats.errors))
        log.warning(
            "sync failed cloud=%s sync_run_id=%s error_count=%d errors=%s",
            cloud,
            run_id,
            len(stats.errors),
            "; ".join(document["errors"][:5]),
        )
    else:
        _metrics.mark_completed(cloud)
        log.info(
            "sync completed cloud=%s sync_run_id=%s created=%d updated=%d deleted=%d deferred=%s",
            cloud,
            run_id,
            stats.created,
            stats.updated,
            stats.deleted,
            document["deferred"],
        )
    return SyncOutcome(status, cloud, run_id, document)


async def _work(
    entry: CloudEntry,
    store: SyncStore,
    pipeline: IngestsEvents,
    open_adapter: Callable[[CloudEntry], Adapter],
    settings: RunSettings,
    poll_at: datetime,
    bound: datetime | None,
    run_id: str,
    stats: RunStats,
    progress: Progress,
) -> None:
    plan = await _decide(entry, store, open_adapter, settings, poll_at, bound, run_id, stats, progress)
    cloud = entry.cloud
    progress.phase = "booking the corrections"
    result = await book(pipeline, plan.corrections, sync_run_id=run_id, cloud=cloud, platform=entry.platform)
    stats.created += result.booked[Kind.CREATE]
    stats.updated += result.booked[Kind.UPDATE]
    stats.deleted += result.booked[Kind.DELETE]
    for kind, count in result.booked.items():
        if count:
            _metrics.RECONCILED.labels(cloud, _metrics.ACTIONS[kind]).inc(count)
    stats.errors.extend(result.errors)


async def _decide(
    entry: CloudEntry,
    store: SyncStore,
    open_adapter: Callable[[CloudEntry], Adapter],
    settings: RunSettings,
    poll_at: datetime,
    bound: datetime | None,
    run_id: str,
    stats: RunStats,
    progress: Progress,
) -> Plan:
    """Observe, name the sizes, read the rows and diff; the observation and the rows end here, so the
    booking holds only the plan."""
    cloud = entry.cloud
    adapter = open_adapter(entry)
    window = deleted_servers_window(bound, poll_at, settings.settle_s)
    if window.widened:
        log.warning(
            "sync told an instant behind the bound cloud=%s sync_run_id=%s at=%s bound=%s deleted_since=%s",
            cloud,
            run_id,
            poll_at.isoformat(),
            bound.isoformat() if bound else None,
            window.since.isoformat() if window.since else None,
        )
    observation = await adapter.observe(ObserveRequest(cloud, poll_at, window.since, progress))
    stats.errors.extend(observation.errors)

    names_failed = await learn_size_names(adapter, store, cloud, progress)
    if names_failed is not None:
        stats.errors.append(names_failed)

    progress.phase = "reading the projection"
    # Only the types the adapter enumerated: the diff ignores the others' rows anyway.
    rows: list[SyncRow] = []
    for resource_type in sorted(observation.enumerated_types):
        rows.extend(await store.sync_rows(cloud, resource_type))
    # Read after the rows: every event they held was committed by then, so none is newer than this.
    stats.rows_read_through = await store.newest_receipt()
    stats.rows_read = True
    plan = diff(observation, rows, poll_at=poll_at, settle_s=settings.settle_s)
    progress.phase = "dating the deletes by absence"
    plan = await date_absence_from_record(store, cloud, plan, rows, poll_at, settings.settle_s)
    progress.phase = "restoring what earlier runs vouched for"
    plan = await restore_vouched_from_record(store, cloud, plan, bound, poll_at)
    stats.deferred_corrections.extend(plan.deferred_corrections)
    stats.complete_types = sorted(observation.complete_types)
    for reason, count in plan.deferred.items():
        stats.deferred[reason] += count
        if count:
            _metrics.DEFERRED.labels(cloud, reason.value).inc(count)
    return plan
