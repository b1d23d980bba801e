"""Dating a delete by absence at the earliest poll the record proves the resource gone.

The rule by name (``absence_delete_instant``), the diff step that applies it, the reading of sync_runs
rows, and a property over generated histories run through the real diff: the chosen instant is never
before a listing that named the resource, nor before its creation plus the settle window, and it is
the earliest run that proves the resource gone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tally.core import ONE_MICROSECOND, ResourceKey
from tally.reconcile import Observation, ObservedResource
from tally.reconcile._diff import date_absence_deletes
from tally.reconcile._record_reads import earlier_runs
from tally.reconcile.rules import (
    EarlierRun,
    Kind,
    Reason,
    RunStats,
    absence_delete_instant,
    diff,
    held_no_row,
)
from tally.store import SyncReceipts, SyncRow

T = datetime(2026, 7, 10, tzinfo=UTC)
KEY = ("volume", "vol-1")
POLL = T + timedelta(hours=10)


def h(n: float) -> datetime:
    return T + timedelta(hours=n)


def volume_row(
    *, created: datetime | None = T, first: datetime | None = T, last: datetime | None = None
) -> SyncRow:
    return SyncRow(
        "volume", "vol-1", "p1", "available", {"size_gb": 1}, last or created or T, True, created, first
    )


def run(
    at: datetime,
    *,
    completed: bool = True,
    types: frozenset[str] = frozenset({"volume"}),
    through: datetime | None = None,
    corrected: frozenset[tuple[str, str]] = frozenset(),
    recorded: bool = True,
) -> EarlierRun:
    return EarlierRun(at, completed, types, through, corrected, recorded)


def test_absence_delete_instant() -> None:
    row, received = volume_row(), h(5)  # created at T, first received five hours later
    at = absence_delete_instant
    assert at(KEY, row, received, [run(h(1), through=h(1))], POLL, 60) == h(1)
    assert at(KEY, row, received, [], POLL, 60) == POLL  # no earlier run: at the poll, as the reference
    assert at(KEY, row, received, [run(h(2), through=h(1)), run(h(1), through=h(1))], POLL, 60) == h(1)
    assert at(KEY, row, received, [run(h(1), through=None)], POLL, 60) == h(1)  # the store held no event


def test_absence_delete_instant_needs_a_completed_run_complete_for_the_type() -> None:
    row, received = volume_row(), h(5)
    failed = run(h(1), completed=False, through=h(1))
    incomplete = run(h(2), types=frozenset({"instance"}), through=h(2))
    assert absence_delete_instant(KEY, row, received, [failed, incomplete], POLL, 0) == POLL
    assert absence_delete_instant(KEY, row, received, [failed, incomplete, run(h(3))], POLL, 0) == h(3)


def test_absence_delete_instant_needs_a_run_after_creation_plus_settle() -> None:
    row, received = volume_row(created=h(1)), h(5)
    edge = run(h(1) + timedelta(seconds=60))
    assert absence_delete_instant(KEY, row, received, [edge], POLL, 60) == POLL  # the edge is inside
    assert absence_delete_instant(KEY, row, received, [edge], POLL, 59) == edge.started_at
    before = run(h(0.5))
    assert absence_delete_instant(KEY, row, received, [before], POLL, 0) == POLL
    # without a create in the history, the oldest event stands in for it
    no_create = volume_row(created=None, first=h(2))
    assert absence_delete_instant(KEY, no_create, received, [run(h(1.5)), run(h(3))], POLL, 0) == h(3)


def test_absence_delete_instant_needs_a_run_that_held_no_row() -> None:
    row, received = volume_row(), h(5)
    held = run(h(6), through=h(5))  # the first receipt is not newer than what the run had read
    assert absence_delete_instant(KEY, row, received, [held], POLL, 0) == POLL
    assert absence_delete_instant(KEY, row, received, [run(h(6), through=h(4))], POLL, 0) == h(6)
    unrecorded = run(h(1), recorded=False)  # an older run, or one that ended before reading the rows
    assert absence_delete_instant(KEY, row, received, [unrecorded], POLL, 0) == POLL
    assert absence_delete_instant(KEY, row, None, [run(h(1))], POLL, 0) == POLL


def test_absence_delete_instant_skips_a_run_that_booked_or_deferred_for_the_key() -> None:
    row, received = volume_row(), h(5)
    touched = run(h(1), corrected=frozenset({KEY}))
    other = run(h(2), corrected=frozenset({("volume", "vol-2"), ("instance", "vol-1")}))
    assert absence_delete_instant(KEY, row, received, [touched, other], POLL, 0) == h(2)


def test_absence_delete_instant_only_from_runs_before_the_poll() -> None:
    row, received = volume_row(), h(5)
    assert absence_delete_instant(KEY, row, received, [run(POLL), run(h(11))], POLL, 0) == POLL


def test_held_no_row() -> None:
    assert held_no_row(run(h(1), through=h(1)), h(2))
    assert not held_no_row(run(h(1), through=h(2)), h(2))  # received at the watermark: it was read
    assert held_no_row(run(h(1), through=None), h(2))  # the store held no event at all
    assert not held_no_row(run(h(1), recorded=False), h(2))


def test_date_absence_deletes() -> None:
    observation = Observation((), (), frozenset({"volume"}), frozenset())
    row = volume_row(created=h(1), last=h(3))
    plan = diff(observation, [row], poll_at=POLL, settle_s=0)
    rows = {KEY: row}
    dated = date_absence_deletes(plan, rows, {KEY: h(5)}, [run(h(4))], poll_at=POLL, settle_s=0)
    (delete,) = dated.corrections
    assert delete.reason is Reason.ABSENT and delete.timestamp == h(4) and delete.requested_at is None
    # a proof behind the row's newest event is dated just past it, and says what it asked for
    early = date_absence_deletes(plan, rows, {KEY: h(5)}, [run(h(2))], poll_at=POLL, settle_s=0)
    assert early.corrections[0].timestamp == h(3) + ONE_MICROSECOND
    assert early.corrections[0].requested_at == h(2)
    # the other corrections are left as they are
    alive = ObservedResource("volume", "vol-2", "p1", "available", {"size_gb": 1}, h(1), h(1))
    both = diff(
        Observation((alive,), (), frozenset({"volume"}), frozenset()), [row], poll_at=POLL, settle_s=0
    )
    redated = date_absence_deletes(both, rows, {KEY: h(5)}, [run(h(4))], poll_at=POLL, settle_s=0)
    assert [(c.resource_id, c.timestamp) for c in redated.corrections] == [("vol-1", h(4)), ("vol-2", h(1))]


def test_earlier_runs_read_the_sync_runs_rows() -> None:
    stats = RunStats(complete_types=["volume"], rows_read=True, rows_read_through=h(2)).to_json()
    stats["deferred_resources"] = [
        {"resource_type": "volume", "resource_id": "vol-2", "kind": "create", "reason": "recent"}
    ]
    records: list[dict[str, Any]] = [
        {"id": "run-1", "started_at": h(1), "status": "completed", "stats": stats},
        {"id": "run-2", "started_at": h(2), "status": "failed", "stats": RunStats().to_json()},
        {"id": "run-3", "started_at": h(3), "status": "running", "stats": {}},
    ]
    booked = {ResourceKey("c", "volume", "vol-3"): SyncReceipts(h(1), frozenset({"run-1"}))}
    first, second, third = earlier_runs(records, booked)
    assert first == EarlierRun(
        h(1),
        True,
        frozenset({"volume"}),
        h(2),
        frozenset({("volume", "vol-2"), ("volume", "vol-3")}),
        run_id="run-1",
        deferred=frozenset({("volume", "vol-2")}),
    )
    assert not second.completed and not second.rows_recorded and second.complete_types == frozenset()
    assert not third.completed and not third.rows_recorded
    empty = RunStats(rows_read=True).to_json()
    assert empty["rows_read_through"] is None
    (read_nothing,) = earlier_runs(
        [{"id": "r", "started_at": h(1), "status": "completed", "stats": empty}], {}
    )
    assert read_nothing.rows_recorded and read_nothing.rows_through is None
    garbled = {"id": "r", "started_at": h(1), "status": "completed", "stats": {"rows_read_through": 5}}
    assert not earlier_runs([garbled], {})[0].rows_recorded


# -- the property: histories run through the real diff --------------------------------------------------


@dataclass(frozen=True)
class PlannedRun:
    at: datetime
    completed: bool
    complete: bool
    recorded: bool  # False: a run from before runs recorded what they had read


@dataclass(frozen=True)
class History:
    created: datetime
    deleted: datetime
    transitional_until: datetime  # cinder reports the volume "creating" until then
    create_received: datetime | None  # None: the create notification is lost too
    noise: tuple[datetime, ...]  # other resources' receipts, which move the watermark
    runs: tuple[PlannedRun, ...]
    settle_s: int


@st.composite
def histories(draw: st.DrawFn) -> History:
    minute = timedelta(minutes=1)
    created = T + draw(st.integers(0, 600)) * minute
    deleted = created + draw(st.integers(1, 600)) * minute
    transitional_until = created + draw(st.integers(0, 30)) * minute
    lost = draw(st.integers(0, 3)) == 0
    create_received = None if lost else created + draw(st.integers(0, 2000)) * minute
    noise = tuple(T + m * minute for m in draw(st.lists(st.integers(0, 3000), max_size=5)))
    offsets = draw(st.lists(st.integers(0, 3000), min_size=1, max_size=24, unique=True))
    runs = [
        PlannedRun(T + m * minute, draw(st.booleans()), draw(st.booleans()), draw(st.integers(0, 9)) > 0)
        for m in sorted(offsets)
    ]
    # A last run after everything, so the absence pass deletes the row if nothing earlier did.
    runs.append(PlannedRun(T + timedelta(days=3), True, True, True))
    return History(
        created,
        deleted,
        transitional_until,
        create_received,
        noise,
        tuple(runs),
        draw(st.sampled_from([0, 60])),
    )


@dataclass(frozen=True)
class Stored:
    timestamp: datetime
    received: datetime
    kind: Kind
    run_id: str | None


def _row_at(events: list[Stored], read_at: datetime) -> SyncRow | None:
    seen = sorted((e for e in events if e.received <= read_at), key=lambda e: e.timestamp)
    if not seen:
        return None
    creates = [e.timestamp for e in seen if e.kind is Kind.CREATE]
    return SyncRow(
        "volume",
        "vol-1",
        "p1",
        "available",
        {"size_gb": 1},
        seen[-1].timestamp,
        seen[-1].kind is not Kind.DELETE,
        min(creates) if creates else None,
        seen[0].timestamp,
    )


@dataclass(frozen=True)
class Outcome:
    dated_at: datetime
    poll_at: datetime
    named_at: tuple[datetime, ...]  # the runs whose listing named the volume alive
    proofs: tuple[datetime, ...]  # the runs that, by the history itself, prove it gone


def _replay(history: History) -> Outcome | None:
    """Run every planned run through the real diff against the projection the history implies, record
    each as a run records itself, and date the first delete by absence as the run would."""
    events: list[Stored] = []
    if history.create_received is not None:
        events.append(Stored(history.created, history.create_received, Kind.CREATE, None))
    records: list[dict[str, Any]] = []
    named: list[datetime] = []
    proofs: list[datetime] = []
    for n, planned in enumerate(history.runs):
        run_id = f"run-{n}"
        t = planned.at
        alive = history.created <= t < history.deleted
        listed = (
            ObservedResource(
                "volume",
                "vol-1",
                "p1",
                "creating" if t < history.transitional_until else "available",
                {"size_gb": 1},
                history.created,
                history.created,
                transitional=t < history.transitional_until,
            )
            if alive
            else None
        )
        if alive:
            named.append(t)
        observation = Observation(
            (listed,) if listed is not None else (),
            (),
            frozenset({"volume"}),
            frozenset() if planned.complete else frozenset({"volume"}),
        )
        row = _row_at(events, t)
        through = max((r for r in [*history.noise, *(e.received for e in events)] if r <= t), default=None)
        plan = diff(observation, [row] if row is not None else [], poll_at=t, settle_s=history.settle_s)
        absent = [c for c in plan.corrections if c.reason is Reason.ABSENT]
        if absent and row is not None:
            anchor = row.created_at or row.first_event_at
            assert anchor is not None
            window = [r for r in records if anchor < r["started_at"] < t]
            receipts = {
                ResourceKey("c", "volume", "vol-1"): SyncReceipts(
                    min(e.received for e in events), frozenset(e.run_id for e in events if e.run_id)
                )
            }
            first = {KEY: receipts[ResourceKey("c", "volume", "vol-1")].first_received_at}
            dated = date_absence_deletes(
                plan, {KEY: row}, first, earlier_runs(window, receipts), poll_at=t, settle_s=history.settle_s
            )
            return Outcome(dated.corrections[0].timestamp, t, tuple(named), tuple(proofs))
        if (
            planned.completed
            and planned.complete
            and planned.recorded
            and t > history.created + timedelta(seconds=history.settle_s)
            and row is None
            and not alive
        ):
            proofs.append(t)
        stats = RunStats(
            deferred_corrections=list(plan.deferred_corrections),
            complete_types=sorted(observation.complete_types),
            rows_read=planned.recorded,
            rows_read_through=through,
        ).to_json()
        status = "completed" if planned.completed else "failed"
        records.append({"id": run_id, "started_at": t, "status": status, "stats": stats})
        for c in plan.corrections:
            events.append(Stored(c.timestamp, t + ONE_MICROSECOND, c.kind, run_id))
    return None


@settings(max_examples=400, deadline=None)
@given(histories())
def test_absence_delete_instant_is_the_earliest_proof_and_never_before_a_listing(history: History) -> None:
    outcome = _replay(history)
    if outcome is None:  # no event of the volume ever reached the store: there is no row to delete
        assert history.create_received is None
        return
    assert outcome.dated_at <= outcome.poll_at
    # never before a listing that named the volume alive, nor before the platform deleted it
    assert all(outcome.dated_at > named for named in outcome.named_at)
    assert outcome.dated_at >= history.deleted
    if outcome.dated_at != outcome.poll_at:
        assert outcome.dated_at > history.created + timedelta(seconds=history.settle_s)
    # and at the earliest run the history itself says proves it gone
    assert outcome.dated_at == (outcome.proofs[0] if outcome.proofs else outcome.poll_at)
