"""A run's plan: observe, learn the size names, read the rows, then the three planning passes (diff,
absence dating, vouched restore) in that order; the observation and the rows end here, so the
booking holds only the plan.

The decisions are the pure rules' (``_diff``, ``_rules``); here is the order of the reads they are
fed. The rows are read once, after the listing (an event delivered in between is then in them, and
the recent rule covers it), and both the diff and the absence pass take them; the record of earlier
runs is read through the run's ``RecordedRuns``, so the absence pass and the vouched restore share
what either read of it.
"""

from __future__ import annotations

from tally.store import SyncRow

from . import _heap, _metrics
from ._adapter import ObserveRequest
from ._context import RunContext
from ._diff import diff
from ._model import Observation, Plan
from ._names import learn_size_names
from ._record_reads import date_absence_from_record, restore_vouched_from_record


async def plan_corrections(run: RunContext) -> Plan:
    """The corrections the run books, and its stats of what it observed and deferred."""
    adapter = run.open_adapter(run.entry)
    request = ObserveRequest(run.cloud, run.poll_at, run.window.since, run.progress)
    observation = await adapter.observe(request)
    _heap.settle()
    run.stats.errors.extend(observation.errors)
    names_failed = await learn_size_names(adapter, run.store, run.cloud, run.progress)
    if names_failed is not None:
        run.stats.errors.append(names_failed)
    rows = await _read_rows(run, observation)
    _heap.settle()
    plan = diff(observation, rows, poll_at=run.poll_at, settle_s=run.settings.settle_s)
    _heap.settle()
    run.progress.phase = "dating the deletes by absence"
    plan = await date_absence_from_record(
        run.record, run.cloud, plan, rows, run.poll_at, run.settings.settle_s
    )
    run.progress.phase = "restoring what earlier runs vouched for"
    plan = await restore_vouched_from_record(run.record, run.cloud, plan, run.bound, run.poll_at)
    _count_deferred(run, observation, plan)
    return plan


async def _read_rows(run: RunContext, observation: Observation) -> list[SyncRow]:
    """The projection's rows of the types the adapter enumerated (the diff ignores the others'), and
    the store's newest receipt once they are read, for later runs to tell which rows this one held."""
    run.progress.phase = "reading the projection"
    rows: list[SyncRow] = []
    for resource_type in sorted(observation.enumerated_types):
        rows.extend(await run.store.sync_rows(run.cloud, resource_type))
    # Read after the rows: every event they held was committed by then, so none is newer than this.
    run.stats.rows_read_through = await run.store.newest_receipt()
    run.stats.rows_read = True
    return rows


def _count_deferred(run: RunContext, observation: Observation, plan: Plan) -> None:
    stats = run.stats
    stats.deferred_corrections.extend(plan.deferred_corrections)
    stats.complete_types = sorted(observation.complete_types)
    for reason, count in plan.deferred.items():
        stats.deferred[reason] += count
        if count:
            _metrics.DEFERRED.labels(run.cloud, reason.value).inc(count)
