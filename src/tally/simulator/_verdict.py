"""The verdict on one span where the store and the oracle differ: tolerated (and by which correction
and run) or off (and why). Pure.

The seeds accept one difference and no other: the store showing the oracle's previous facts from
the change until a correction dated at its poll (a ``sync.update``, or a ``sync.delete`` found by
absence) booked by the first run that could book it. That run is read from the runs the store
records (:mod:`._runs`), never from a setting. A span the truth moved on from before any such run
began (a lost update undone before the next run could see it) is tolerated too: no run could have
booked it, and so is one a later notification caught up with before any such run began (a lost
``finish_resize`` whose ``resize.confirm`` carries the new flavor): no run could have booked either. A
``sync.create`` dated at the platform's creation instant, ahead of the oracle's start, is accepted
when that instant is known and it carries the facts the platform listed to its run (a volume resized
before the run that found it is booked at its new size: the seeds book what the listing says).
A run that failed on another type keeps the corrections of the types it listed to the end
(docs/reconciliation.md, "Failures"): one such run booked ahead of the first completed run that could
is tolerated as well (the real cloud's cinder-down fault shows it). Everything else is off.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from tally.core import Event, InstantError, StoredEvent, parse_instant

from ._runs import SyncRun, failed_run_could_book, first_absence_run, first_update_run

Facts = tuple[str, str, tuple[tuple[str, Any], ...]]
Span = tuple[datetime, datetime, Facts]
_TINY: Final = timedelta(microseconds=1)

RECONCILIATION: Final = "reconciliation"
DRIFT: Final = "drift"
ABSENT: Final = "absent from a complete listing"
REPORTED_DELETE: Final = "reported delete"
MISSED_CREATE: Final = "missed create"

# Tolerated causes.
POLL_DATED_UPDATE: Final = "poll-dated update"
DELETE_BY_ABSENCE: Final = "delete by absence"
LOST_UPDATE: Final = "lost-update"
NO_RUN_COULD_BOOK: Final = "no run could book it"
CAUGHT_UP_BEFORE_ANY_RUN: Final = "caught up by a notification before any run could book it"
CREATE_AT_PLATFORM_INSTANT: Final = "create at the platform's instant"
BY_A_FAILED_RUN: Final = "booked by a failed run that listed the type"
# Off causes.
CREATE_EARLY: Final = "create early"
CREATE_LATE: Final = "create late"
DELETE_EARLY: Final = "delete early"
DELETE_LATE: Final = "delete late"
REPORTED_DELETE_OFF: Final = "reported delete not at terminated_at"
NOT_CORRECTED: Final = "not corrected by the first run that could"
LATER_RUN: Final = "booked by another run than the first that could"
DEFERRING_RUN: Final = "booked by a run that deferred it"
NOT_AT_RUN_INSTANT: Final = "not dated at its run's instant"
UNKNOWN_RUN: Final = "booked by a run the store does not record"
NOT_IN_ORACLE: Final = "not in the oracle"
MISSING: Final = "missing from the store"


@dataclass(frozen=True, slots=True)
class Judgement:
    tolerated: bool
    cause: str
    correction_id: str | None = None
    run_id: str | None = None
    due_run_id: str | None = None


@dataclass(frozen=True, slots=True)
class Context:
    """What every verdict of one comparison reads besides the resource itself."""

    runs: Sequence[SyncRun]
    runs_by_id: Mapping[str, SyncRun]
    settle: timedelta
    platform_created: Mapping[tuple[str, str], datetime]
    period_to: datetime
    # The resources the month lost an update notification of (the oracle's ``lost-update`` fault).
    lost_updates: frozenset[tuple[str, str]] = frozenset()


def fact_at(spans: Sequence[Span], at: datetime) -> Facts | None:
    for a, b, f in spans:
        if a <= at < b:
            return f
    return None


def _provider(event: Event) -> Mapping[str, Any]:
    provider = event.payload.get("provider")
    return provider if isinstance(provider, Mapping) else {}


def _dated_at(event: Event, instant: datetime) -> bool:
    """At the run's instant, or one microsecond past the row's newest event where that forced it."""
    if event.timestamp == instant:
        return True
    forced = _provider(event).get("dated_past_newest_event")
    if not isinstance(forced, Mapping) or not isinstance(forced.get("requested"), str):
        return False
    try:
        return parse_instant(forced["requested"]) == instant
    except InstantError:
        return False


def _stale_since(
    expected: Sequence[Span], stored: Sequence[Span], at: datetime, facts: Facts
) -> datetime | None:
    """When the store shows at ``at`` facts the oracle held earlier in the same stored span: the
    instant the oracle left them (the change the store has not caught up with)."""
    span = next(((a, b) for a, b, f in stored if a <= at < b and f == facts), None)
    if span is None:
        return None
    left = [b for a, b, f in expected if f == facts and span[0] < b <= at]
    return max(left) if left else None


def _breakpoint(expected: Sequence[Span], at: datetime) -> bool:
    return fact_at(expected, at) != fact_at(expected, at - _TINY)


def _off_kind(
    key: tuple[str, str],
    a: datetime,
    b: datetime,
    o: Facts | None,
    s: Facts | None,
    expected: Sequence[Span],
    stored: Sequence[Span],
    history: Sequence[StoredEvent],
    ctx: Context,
) -> Judgement:
    if o is not None and s is not None:
        return Judgement(False, "wrong " + _fields(o, s))
    if o is None:
        if not expected:
            return Judgement(False, NOT_IN_ORACLE)
        if fact_at(expected, a - _TINY) is None and fact_at(expected, b) is not None:
            first = next((e.event for e in history if e.event.timestamp == a), None)
            if (
                first is not None
                and first.event_type == "sync.create"
                and _provider(first).get("reason") == MISSED_CREATE
                and ctx.platform_created.get(key) == a
            ):
                run_id = str(_provider(first).get("sync_run_id"))
                booked_by = ctx.runs_by_id.get(run_id)
                listed = fact_at(expected, booked_by.started_at) if booked_by is not None else None
                if s in (fact_at(expected, b), listed):
                    return Judgement(True, CREATE_AT_PLATFORM_INSTANT, first.event_id, run_id)
            return Judgement(False, CREATE_EARLY, first.event_id if first else None)
        return Judgement(False, DELETE_LATE)
    if fact_at(stored, a - _TINY) is not None:
        return Judgement(False, DELETE_EARLY)
    if any(x > a for x, _, _ in stored):
        return Judgement(False, CREATE_LATE)
    return Judgement(False, MISSING)


def judge(
    key: tuple[str, str],
    a: datetime,
    b: datetime,
    o: Facts | None,
    s: Facts | None,
    expected: Sequence[Span],
    stored: Sequence[Span],
    history: Sequence[StoredEvent],
    ctx: Context,
) -> Judgement:
    """The verdict on the span ``[a, b)`` where the oracle has ``o`` and the store ``s``."""
    changed = _stale_since(expected, stored, a, s) if s is not None else None
    if changed is None:
        return _off_kind(key, a, b, o, s, expected, stored, history, ctx)
    rtype, rid = key
    kind = "delete" if o is None else "update"
    correction = next(
        (
            e.event
            for e in history
            if e.event.timestamp == b
            and e.event.source == RECONCILIATION
            and e.event.event_type == f"sync.{kind}"
        ),
        None,
    )
    reason = _provider(correction).get("reason") if correction is not None else None
    if reason == REPORTED_DELETE:
        assert correction is not None
        return Judgement(False, REPORTED_DELETE_OFF, correction.event_id)
    if kind == "delete":
        born = history[0].event.timestamp if history else changed
        due = first_absence_run(ctx.runs, rtype, rid, changed, born, ctx.settle)
    else:
        due = first_update_run(ctx.runs, rtype, rid, changed, ctx.settle)
    due_id = due.run_id if due is not None else None
    if correction is None or reason != (DRIFT if kind == "update" else ABSENT):
        if due is None or due.started_at >= b:
            if b == ctx.period_to or _breakpoint(expected, b):
                return Judgement(True, NO_RUN_COULD_BOOK, due_run_id=due_id)
            # Only where the month lost an update of this resource: a collector event that is merely dated
            # late must stay off, however soon a run would have come.
            caught_up = any(e.event.timestamp == b and e.event.source != RECONCILIATION for e in history)
            if (
                kind == "update"
                and key in ctx.lost_updates
                and caught_up
                and fact_at(stored, b) == fact_at(expected, b)
            ):
                return Judgement(True, CAUGHT_UP_BEFORE_ANY_RUN, due_run_id=due_id)
        if due is not None and due.started_at < b:
            return Judgement(False, NOT_CORRECTED, due_run_id=due_id)
        return Judgement(False, DELETE_LATE if kind == "delete" else "wrong " + _fields(o, s))
    run = ctx.runs_by_id.get(str(_provider(correction).get("sync_run_id")))
    if run is None:
        return Judgement(False, UNKNOWN_RUN, correction.event_id, due_run_id=due_id)
    if due is not None and due.started_at < run.started_at and _dated_at(correction, due.started_at):
        # Dated at the first run that could book it by a later run: a delete by absence that run proves
        # (docs/reconciliation.md, "How a delete by absence is dated"), or the facts it vouched for
        # restored after a late event landed behind it ("A late event behind a run that vouched").
        cause = POLL_DATED_UPDATE if kind == "update" else DELETE_BY_ABSENCE
        return Judgement(True, cause, correction.event_id, run.run_id, due_id)
    if not _dated_at(correction, run.started_at):
        return Judgement(False, NOT_AT_RUN_INSTANT, correction.event_id, run.run_id, due_id)
    if (rtype, rid) in run.deferred:
        return Judgement(False, DEFERRING_RUN, correction.event_id, run.run_id, due_id)
    if due is None or run.run_id != due.run_id:
        first_event = (history[0].event.timestamp if history else changed) if kind == "delete" else None
        if (due is None or run.started_at < due.started_at) and failed_run_could_book(
            run, rtype, rid, changed, first_event, ctx.settle
        ):
            return Judgement(True, BY_A_FAILED_RUN, correction.event_id, run.run_id, due_id)
        return Judgement(False, LATER_RUN, correction.event_id, run.run_id, due_id)
    cause = POLL_DATED_UPDATE if kind == "update" else DELETE_BY_ABSENCE
    return Judgement(True, cause, correction.event_id, run.run_id, due_id)


def differing_fields(o: Facts | None, s: Facts | None) -> tuple[str, ...]:
    """What differs between two sides: ``presence``, or some of state, project and size."""
    if o is None or s is None:
        return ("presence",)
    return tuple(n for n, x, y in zip(("state", "project", "size"), o, s, strict=True) if x != y)


def _fields(o: Facts | None, s: Facts | None) -> str:
    return " and ".join(differing_fields(o, s))
