"""What the planning passes read of the record, and only that: the runs and receipts a delete by
absence is dated from (``date_absence_from_record``), and the late histories a restore of vouched
facts is decided from (``restore_vouched_from_record``). The decisions are the pure rules'
(``_diff``); here is how little of the store they need, a page of runs at a time. A run hands them
its ``RecordedRuns`` (``_runs_read``) as the store, so a window of runs both read is read once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from tally.core import ONE_MICROSECOND, ResourceKey, StoredEvent, parse_instant
from tally.store import SyncReceipts, SyncRow

from ._diff import date_absence_deletes, restore_vouched_facts
from ._model import EarlierRun, Plan, Reason
from ._rules import held_no_row

RUNS_PAGE = 50
LATE_EXCEPT = ("sync.create", "sync.delete")


class RecordReader(Protocol):
    """The store methods the planning passes read (``tally.store.Store`` provides them)."""

    async def sync_runs_between(
        self, cloud: str, after: datetime, before: datetime, *, limit: int | None = None
    ) -> list[dict[str, Any]]: ...
    async def sync_receipts(self, keys: Sequence[ResourceKey]) -> dict[ResourceKey, SyncReceipts]: ...
    async def late_keys(
        self,
        cloud: str,
        received_after: datetime,
        dated_before: datetime,
        *,
        except_types: Sequence[str] = (),
    ) -> list[ResourceKey]: ...
    async def histories(self, keys: Sequence[ResourceKey]) -> dict[ResourceKey, list[StoredEvent]]: ...


async def date_absence_from_record(
    store: RecordReader, cloud: str, plan: Plan, rows: Sequence[SyncRow], poll_at: datetime, settle_s: int
) -> Plan:
    """Read the record the deletes by absence are dated from: only for the rows they delete, only the
    runs since the earliest of those rows' creation."""
    absent = {(c.resource_type, c.resource_id) for c in plan.corrections if c.reason is Reason.ABSENT}
    if not absent:
        return plan
    by_key = {(r.resource_type, r.resource_id): r for r in rows if (r.resource_type, r.resource_id) in absent}
    anchors = [a for r in by_key.values() if (a := r.created_at or r.first_event_at) is not None]
    if not anchors:
        return plan
    receipts = await store.sync_receipts([ResourceKey(cloud, t, i) for t, i in sorted(absent)])
    if not receipts:
        return plan
    runs = await runs_until_held(store, cloud, min(anchors), poll_at, receipts)
    first = {(k.resource_type, k.resource_id): r.first_received_at for k, r in receipts.items()}
    return date_absence_deletes(plan, by_key, first, runs, poll_at=poll_at, settle_s=settle_s)


async def restore_vouched_from_record(
    store: RecordReader, cloud: str, plan: Plan, bound: datetime | None, poll_at: datetime
) -> Plan:
    """Read the record a restore of vouched facts is decided from: only the keys with an event received
    after the previous completed run read the rows and dated before that run, their histories, and the
    runs since the oldest such event. The previous run looked at everything received before it."""
    if bound is None:
        return plan
    previous = [
        r
        for r in await store.sync_runs_between(cloud, bound - ONE_MICROSECOND, poll_at, limit=RUNS_PAGE)
        if r["started_at"] == bound and r["status"] == "completed"
    ]
    through = (previous[0].get("stats") or {}).get("rows_read_through") if previous else None
    if not isinstance(through, str):
        return plan
    read_at = parse_instant(through)
    # A run's creates dated behind it (at the platform's instant) and its deletes by absence dated at an
    # earlier run are late to the runs before it, but no run that held the row vouches otherwise (it
    # would have booked or deferred them itself), and a delete is never undone: leaving them out keeps
    # a first run's whole cloud of creates from costing the next run a history read each.
    keys = await store.late_keys(cloud, read_at, bound, except_types=LATE_EXCEPT)
    if not keys:
        return plan
    histories = {(k.resource_type, k.resource_id): h for k, h in (await store.histories(keys)).items()}
    oldest = min(e.event.timestamp for h in histories.values() for e in h if e.received_at > read_at)
    records = await store.sync_runs_between(cloud, oldest, poll_at)
    return restore_vouched_facts(plan, histories, earlier_runs(records, {}), poll_at=poll_at)


async def runs_until_held(
    store: RecordReader,
    cloud: str,
    since: datetime,
    poll_at: datetime,
    receipts: Mapping[ResourceKey, SyncReceipts],
) -> list[EarlierRun]:
    """The runs after ``since``, a page at a time, up to the first that held every one of the rows.

    A row, once stored, is held by every later run (the store only grows, the runs of a cloud do not
    overlap, and the instants told to them do not go backwards), so no later run can prove anything:
    a long-lived resource costs a page, not its life's runs. Where clock skew breaks that order,
    stopping early only leaves a delete later."""
    newest_first = max(r.first_received_at for r in receipts.values())
    runs: list[EarlierRun] = []
    after = since
    while True:
        page = await store.sync_runs_between(cloud, after, poll_at, limit=RUNS_PAGE)
        runs.extend(earlier_runs(page, receipts))
        if len(page) < RUNS_PAGE or (runs[-1].rows_recorded and not held_no_row(runs[-1], newest_first)):
            return runs
        after = page[-1]["started_at"]


def earlier_runs(
    records: Sequence[Mapping[str, Any]], receipts: Mapping[ResourceKey, SyncReceipts]
) -> list[EarlierRun]:
    """The sync_runs rows as the absence rule reads them: a key counts as corrected by a run that
    deferred a correction for it (``stats.deferred_resources``) or booked one (an event naming it)."""
    booked: dict[str, set[tuple[str, str]]] = {}
    for key, receipt in receipts.items():
        for run_id in receipt.sync_run_ids:
            booked.setdefault(run_id, set()).add((key.resource_type, key.resource_id))
    runs: list[EarlierRun] = []
    for record in records:
        stats = record.get("stats") or {}
        deferred = {
            (d["resource_type"], d["resource_id"])
            for d in stats.get("deferred_resources", ())
            if isinstance(d, Mapping) and "resource_type" in d and "resource_id" in d
        }
        through = stats.get("rows_read_through")
        runs.append(
            EarlierRun(
                started_at=record["started_at"],
                completed=record["status"] == "completed",
                complete_types=frozenset(stats.get("complete_types", ())),
                rows_through=parse_instant(through) if isinstance(through, str) else None,
                corrected=frozenset(deferred | booked.get(str(record["id"]), set())),
                # A value that is neither an instant nor null is no record of what the run held.
                rows_recorded="rows_read_through" in stats and (through is None or isinstance(through, str)),
                run_id=str(record["id"]),
                deferred=frozenset(deferred),
            )
        )
    return runs
