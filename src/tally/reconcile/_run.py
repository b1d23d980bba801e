"""One sync run of one cloud: slot, lock, admission, row, plan, book, record.

The run reads as a short pipeline: ``run_sync`` takes the slot and the lock, ``_handover.admit``
dates and admits the run, ``_open`` reads the bound, inserts the row and makes the run's
``RunContext`` (``_context``), which every later step reads: ``_planning.plan_corrections``, the
booking, ``_finish``. The order of work, and why:

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
   within the interval (``_handover.admit``).
3. Read the bound (last completed run's started_at) *before* inserting this run's
   row, then insert the row with started_at = the run's instant.
4. Under the budget: plan (``_planning``: observe, list the size names, read the rows, diff, date
   the deletes by absence, restore what earlier runs vouched for), then book the plan through the
   ingest pipeline.
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
from collections.abc import Callable
from datetime import datetime

import anyio

from tally.actors import Budget, BudgetExceeded
from tally.config import CloudEntry
from tally.core import utc_now
from tally.store import (
    ConnectionWaits,
    ConnectionWaitTimeout,
    StoreUnavailable,
    SyncLockHeld,
    SyncLockLost,
    connection_deadline,
)

from . import _heap, _metrics
from ._adapter import Adapter
from ._booking import IngestsEvents, book
from ._clock import WALL_CLOCK
from ._context import RunContext, RunSettings, RunStats, SyncStore
from ._errors import RunAborted
from ._handover import admit
from ._model import Kind, Plan, SyncOutcome
from ._model import Status as RunStatus
from ._planning import plan_corrections
from ._runs_read import RecordedRuns

log = logging.getLogger(__name__)

FINISH_GRACE_S = 10.0


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
        if slots is not None and (no_slot := await _wait_for_slot(slots, cloud, settings.budget_s)):
            return no_slot
        slot_wait = time.monotonic() - began
        _metrics.SLOT_WAIT.observe(slot_wait)
        _metrics.IN_PROGRESS.inc()
        # Whether the run began (its row inserted, its end recorded even when cancelled), and its outcome.
        started = False
        ran: SyncOutcome | None = None
        try:
            instant = at if at is not None else WALL_CLOCK.now()
            async with store.sync_lock(cloud):
                poll_at = await admit(store, cloud, instant, dated_by_wall=at is None, min_gap_s=min_gap_s)
                if poll_at is None:
                    _metrics.SYNC_RUNS.labels(cloud, "skipped").inc()
                    log.info("sync not due cloud=%s reason=synced within min_gap_s=%g", cloud, min_gap_s)
                    return SyncOutcome(RunStatus.NOT_DUE, cloud)
                started = True
                run = await _open(
                    entry,
                    store=store,
                    pipeline=pipeline,
                    open_adapter=open_adapter,
                    settings=settings,
                    config_error=config_error,
                    poll_at=poll_at,
                    dated_by_wall=at is None,
                    began=began,
                    slot_wait=slot_wait,
                    waits=waits,
                )
                ran = await _locked_run(run)
            return ran
        except SyncLockLost as exc:
            if not started:
                return _database_away(cloud, str(exc))
            # The run began, was cancelled when its lock went (the lock logged why) and recorded its end,
            # counted as failed: that is its outcome, not "the database does not answer".
            return ran or SyncOutcome(RunStatus.FAILED, cloud, None, {"errors": [str(exc)], "error_count": 1})
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


async def _wait_for_slot(slots: anyio.CapacityLimiter, cloud: str, budget_s: float) -> SyncOutcome | None:
    """None once a slot is taken; the run's not-started outcome when the budget ran out waiting."""
    with anyio.move_on_after(budget_s) as waiting:
        await slots.acquire()
    if not waiting.cancelled_caught:
        return None
    return _not_started(
        cloud,
        "slot",
        f"waited the whole budget of {budget_s:g} s for a sync slot: all "
        f"{slots.total_tokens:g} of TALLY_REPORTING_SYNC_MAX_CONCURRENT were running",
    )


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


async def _open(
    entry: CloudEntry,
    *,
    store: SyncStore,
    pipeline: IngestsEvents,
    open_adapter: Callable[[CloudEntry], Adapter],
    settings: RunSettings,
    config_error: str | None,
    poll_at: datetime,
    dated_by_wall: bool,
    began: float,
    slot_wait: float,
    waits: ConnectionWaits,
) -> RunContext:
    """Read the bound, insert the run's row and make the run's context; ``began`` is when it asked for
    the slot."""
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
    return RunContext(
        entry=entry,
        store=store,
        pipeline=pipeline,
        open_adapter=open_adapter,
        settings=settings,
        config_error=config_error,
        poll_at=poll_at,
        dated_by_wall=dated_by_wall,
        bound=bound,
        run_id=run_id,
        began=began,
        worked_from=time.monotonic(),
        waits=waits,
        record=RecordedRuns(store, cloud),
        stats=RunStats(),
    )


async def _locked_run(run: RunContext) -> SyncOutcome:
    """The run once it holds its slot, its lock and its row: plan, book, record its end."""
    cloud, stats, progress = run.cloud, run.stats, run.progress
    try:
        try:
            with Budget(run.remaining_s()), _heap.holding():
                if run.config_error is not None:
                    raise RunAborted(run.config_error)
                _warn_if_widened(run)
                await _book(run, await plan_corrections(run))
        except BudgetExceeded:
            if run.waits.waiting:
                stats.errors.append(
                    f"the run of {cloud} reached its budget of {run.settings.budget_s:g} s waiting for a "
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
                log.exception("sync crashed cloud=%s sync_run_id=%s", cloud, run.run_id)
            stats.errors.append(f"the run of {cloud} failed while {progress.current()}: {exc}")
    except BaseException:
        stats.errors.append(f"the run of {cloud} was cancelled while {progress.current()}")
        with anyio.CancelScope(shield=True):
            await _finish(run)
        raise
    return await _finish(run)


def _warn_if_widened(run: RunContext) -> None:
    """A run told an instant behind its bound looks for deleted servers from further back."""
    if run.window.widened:
        log.warning(
            "sync told an instant behind the bound cloud=%s sync_run_id=%s at=%s bound=%s deleted_since=%s",
            run.cloud,
            run.run_id,
            run.poll_at.isoformat(),
            run.bound.isoformat() if run.bound else None,
            run.window.since.isoformat() if run.window.since else None,
        )


async def _book(run: RunContext, plan: Plan) -> None:
    run.progress.phase = "booking the corrections"
    result = await book(
        run.pipeline, plan.corrections, sync_run_id=run.run_id, cloud=run.cloud, platform=run.entry.platform
    )
    run.stats.created += result.booked[Kind.CREATE]
    run.stats.updated += result.booked[Kind.UPDATE]
    run.stats.deleted += result.booked[Kind.DELETE]
    for kind, count in result.booked.items():
        if count:
            _metrics.RECONCILED.labels(run.cloud, _metrics.ACTIONS[kind]).inc(count)
    run.stats.errors.extend(result.errors)


async def _finish(run: RunContext) -> SyncOutcome:
    cloud, run_id, stats = run.cloud, run.run_id, run.stats
    status = RunStatus.FAILED if stats.errors else RunStatus.COMPLETED
    document = stats.to_json()
    # A run the wall clock dated after its cloud's newest run (the clock went back) ends no earlier.
    completed_at = max(utc_now(), run.poll_at) if run.dated_by_wall else utc_now()
    try:
        with connection_deadline(time.monotonic() + FINISH_GRACE_S):
            await run.store.finish_sync_run(run_id, status.value, document, completed_at)
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
    _metrics.SYNC_DURATION.labels(cloud, status.value).observe(time.monotonic() - run.worked_from)
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
