"""A late event behind a run that vouched for the row (beyond the reference).

The rules by name (``arrived_behind``, ``vouched_row``, ``folded_at``, ``vouched_changes``,
``vouched_restore``), the diff step that applies them (``restore_vouched_facts``), and properties over
generated histories run through the real diff: events reach the store with delays or never, every run
lists the truth at its instant, and once everything has arrived the record at every vouching run's
instant shows what that run listed; a history whose events all arrive before the next run changes
nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tally.core import StoredEvent, parse_event
from tally.reconcile import Observation, ObservedResource
from tally.reconcile._diff import restore_vouched_facts
from tally.reconcile._rules import (
    arrived_behind,
    folded_at,
    vouched_changes,
    vouched_restore,
    vouched_row,
)
from tally.reconcile.rules import EarlierRun, Kind, Plan, Reason, diff, event_of

T = datetime(2026, 7, 1, tzinfo=UTC)
KEY = ("instance", "vm-1")
CLOUD = "os-test"
SMALL = {"vcpus": 1, "ram_gb": 2, "disk_gb": 10, "flavor": "m1.small"}
LARGE = {"vcpus": 4, "ram_gb": 8, "disk_gb": 40, "flavor": "m1.large"}


def h(n: float) -> datetime:
    return T + timedelta(hours=n)


def stored(
    event_type: str,
    at: datetime,
    received: datetime,
    *,
    state: str | None = "active",
    size: dict[str, Any] | None = None,
    run_id: str | None = None,
    project_id: str = "p1",
) -> StoredEvent:
    payload: dict[str, Any] = {}
    if not event_type.endswith("delete") and not event_type.endswith("delete.end"):
        payload["state"] = state
        payload["size"] = size if size is not None else SMALL
    if run_id is not None:
        payload["provider"] = {"reason": "drift", "sync_run_id": run_id}
    wire = {
        "event_id": f"{event_type}-{at.isoformat()}-{received.isoformat()}",
        "timestamp": at.isoformat(),
        "event_type": event_type,
        "platform": "openstack",
        "cloud": CLOUD,
        "resource_type": KEY[0],
        "resource_id": KEY[1],
        "project_id": project_id,
        "payload": payload,
    }
    source = "reconciliation" if run_id is not None else "collector"
    return StoredEvent(parse_event(wire, source=source), received)


def run(
    at: datetime,
    through: datetime | None,
    *,
    run_id: str = "run-1",
    completed: bool = True,
    types: frozenset[str] = frozenset({"instance"}),
    deferred: frozenset[tuple[str, str]] = frozenset(),
    recorded: bool = True,
) -> EarlierRun:
    return EarlierRun(at, completed, types, through, frozenset(), recorded, run_id, deferred)


CREATE = stored("compute.instance.create.end", h(1), h(1.1))
# powered off at 2:00, but the notification reached the store only at 50:00
LATE_OFF = stored("compute.instance.power_off.end", h(2), h(50), state="shutoff")


def test_arrived_behind() -> None:
    history = [CREATE, LATE_OFF]
    assert arrived_behind(run(h(24), h(24)), history)
    assert not arrived_behind(run(h(24), h(60)), history)  # it read the power_off
    assert not arrived_behind(run(h(1.5), h(1.5)), history)  # the power_off is dated after it
    own = stored("sync.update", h(2), h(50), run_id="run-1")
    assert not arrived_behind(run(h(24), h(24)), [CREATE, own])  # its own booking is not late to it
    assert not arrived_behind(run(h(24), h(24), recorded=False), history)


def test_vouched_row() -> None:
    history = [CREATE, LATE_OFF]
    row = vouched_row(KEY, run(h(24), h(24)), history)
    assert row is not None and row.state == "active" and dict(row.size) == SMALL
    assert vouched_row(KEY, run(h(24), h(24), completed=False), history) is None
    assert vouched_row(KEY, run(h(24), h(24), types=frozenset({"volume"})), history) is None
    assert vouched_row(KEY, run(h(24), h(24), deferred=frozenset({KEY})), history) is None
    assert vouched_row(KEY, run(h(24), h(24), recorded=False), history) is None
    assert vouched_row(KEY, run(h(0.5), None), history) is None  # it held no row and booked none
    # its own booking counts: a run that held no row and booked the create vouches for the create
    booked = stored("sync.create", h(1), h(5.1), size=LARGE, run_id="run-1")
    mine = vouched_row(KEY, run(h(5), h(0.5)), [booked, CREATE])
    assert mine is not None and dict(mine.size) == LARGE
    # a delete it booked, or a restore in place of its drift update, vouches for nothing
    gone = stored("sync.delete", h(24), h(24.1), run_id="run-1")
    assert vouched_row(KEY, run(h(24), h(24)), [CREATE, gone]) is None
    restore = stored("sync.update", h(10), h(24.1), run_id="run-1")
    assert vouched_row(KEY, run(h(24), h(24)), [CREATE, restore]) is None
    # a row it read with an event dated after its instant was compared at newer facts
    ahead = stored("compute.instance.power_off.end", h(30), h(20), state="shutoff")
    assert vouched_row(KEY, run(h(24), h(24)), [CREATE, ahead]) is None


def test_folded_at() -> None:
    history = [CREATE, LATE_OFF]
    assert folded_at(history, h(0.5)) is None
    at_one = folded_at(history, h(1.5))
    at_day = folded_at(history, h(24))
    assert at_one is not None and at_one.state == "active"
    assert at_day is not None and at_day.state == "shutoff"


def test_vouched_changes() -> None:
    vouched = folded_at([CREATE], h(24))
    resized = folded_at(
        [stored("compute.instance.create.end", h(1), h(1), size=LARGE, project_id="p2")], h(2)
    )
    off = folded_at([CREATE, LATE_OFF], h(24))
    assert vouched is not None and resized is not None and off is not None
    assert vouched_changes(vouched, vouched) == {}
    assert vouched_changes(vouched, off) == {"state": {"old": "shutoff", "new": "active"}}
    assert vouched_changes(vouched, resized) == {
        "project_id": {"old": "p2", "new": "p1"},
        "size": {"old": LARGE, "new": SMALL},
    }


def test_vouched_restore() -> None:
    history = [CREATE, LATE_OFF]
    runs = [run(h(12), h(12), run_id="r12"), run(h(24), h(24), run_id="r24"), run(h(36), h(36), run_id="r36")]
    found = vouched_restore(KEY, history, runs, h(60))
    assert found is not None and found.at == h(12) and found.row.state == "active"
    assert found.changes == {"state": {"old": "shutoff", "new": "active"}}
    # once restored at 12:00 the record departs from the run at 24:00 no more: the restore holds there
    restored = stored("sync.update", h(12), h(60.1), run_id="r60")
    assert vouched_restore(KEY, [*history, restored], runs, h(72)) is None
    # only the runs before this one's instant count, and a run that read the power_off vouched for it
    assert vouched_restore(KEY, history, runs, h(12)) is None
    assert vouched_restore(KEY, history, [run(h(24), h(60))], h(72)) is None
    # a late delete is not undone
    late_delete = stored("compute.instance.delete.end", h(2), h(50))
    assert vouched_restore(KEY, [CREATE, late_delete], runs, h(60)) is None
    # no late event, no restore
    assert vouched_restore(KEY, [CREATE], runs, h(60)) is None


def drift_update(at: datetime) -> Any:
    observed = ObservedResource("instance", "vm-1", "p1", "shutoff", SMALL, h(1), h(1))
    return diff(
        Observation((observed,), (), frozenset({"instance"}), frozenset()),
        [folded_at([CREATE], at)],  # type: ignore[list-item]
        poll_at=at,
        settle_s=0,
    )


def test_restore_vouched_facts() -> None:
    runs = [run(h(12), h(12), run_id="r12")]
    plan = drift_update(h(60))
    (update,) = plan.corrections
    assert update.kind is Kind.UPDATE and update.timestamp == h(60)
    restored = restore_vouched_facts(plan, {KEY: [CREATE, LATE_OFF]}, runs, poll_at=h(60))
    (restore,) = restored.corrections  # in place of this run's own drift update of the key
    assert restore.kind is Kind.UPDATE and restore.reason is Reason.DRIFT
    assert restore.timestamp == h(12) and restore.state == "active" and restore.size is None
    assert dict(restore.changes) == {"state": {"old": "shutoff", "new": "active"}}
    assert restored.deferred == plan.deferred
    # a key without a departure keeps its corrections
    assert restore_vouched_facts(plan, {KEY: [CREATE]}, runs, poll_at=h(60)) == plan
    empty = Plan((), plan.deferred)
    added = restore_vouched_facts(empty, {KEY: [CREATE, LATE_OFF]}, runs, poll_at=h(60))
    assert [c.timestamp for c in added.corrections] == [h(12)]


# -- properties over generated histories -------------------------------------------------------------

STATES = ("active", "shutoff", "paused")
RUN_EVERY_H = 6
RUNS = 12
END = RUN_EVERY_H * (RUNS + 1)


@dataclass(frozen=True)
class Change:
    at_h: float  # when the truth changed
    state: str
    large: bool
    delay_h: float | None  # how long its notification took; None: lost


def truth_at(changes: Sequence[Change], at: datetime) -> Change:
    current = changes[0]
    for change in changes:
        if h(change.at_h) <= at:
            current = change
    return current


def size_of(change: Change) -> dict[str, Any]:
    return LARGE if change.large else SMALL


def notification(change: Change, first: bool) -> StoredEvent | None:
    if change.delay_h is None:
        return None
    event_type = "compute.instance.create.end" if first else "compute.instance.update"
    received = h(change.at_h + change.delay_h + 0.01)
    return stored(event_type, h(change.at_h), received, state=change.state, size=size_of(change))


def one_run(
    number: int, at: datetime, changes: Sequence[Change], events: list[StoredEvent], runs: list[EarlierRun]
) -> bool:
    """One run told ``at`` over the events received by then: the real diff against the listing of the
    truth, then the restore; its bookings join ``events``. Answers whether it booked a restore."""
    known = [e for e in events if e.received_at <= at]
    row = folded_at(known, h(END * 10))
    truth = truth_at(changes, at)
    last_change = max(h(c.at_h) for c in changes if h(c.at_h) <= at)
    observed = ObservedResource(
        "instance", "vm-1", "p1", truth.state, size_of(truth), h(changes[0].at_h), last_change
    )
    observation = Observation((observed,), (), frozenset({"instance"}), frozenset())
    plan = diff(observation, [row] if row is not None else [], poll_at=at, settle_s=0)
    restored = restore_vouched_facts(plan, {KEY: known}, runs, poll_at=at)
    run_id = f"run-{number}"
    for correction in restored.corrections:
        wire = event_of(correction, sync_run_id=run_id, cloud=CLOUD, platform="openstack")
        events.append(StoredEvent(parse_event(wire, source="reconciliation"), at + timedelta(minutes=1)))
    runs.append(run(at, at, run_id=run_id))
    return restored != plan


change_st = st.builds(
    Change,
    at_h=st.floats(min_value=0.5, max_value=END - 1).map(lambda x: round(x, 2)),
    state=st.sampled_from(STATES),
    large=st.booleans(),
    delay_h=st.one_of(st.none(), st.floats(min_value=0, max_value=2 * END).map(lambda x: round(x, 2))),
)


def month(first: Change, rest: list[Change]) -> list[Change]:
    # the first change is the creation at 0:30; its notification is never lost here
    create = Change(0.5, first.state, first.large, first.delay_h if first.delay_h is not None else 0.0)
    later = sorted({c.at_h: c for c in rest if c.at_h > 0.5}.values(), key=lambda c: c.at_h)
    return [create, *later]


def replay(changes: Sequence[Change]) -> tuple[list[StoredEvent], list[EarlierRun], list[bool]]:
    events = [e for i, c in enumerate(changes) if (e := notification(c, i == 0)) is not None]
    runs: list[EarlierRun] = []
    restored = [one_run(n, h(n * RUN_EVERY_H), changes, events, runs) for n in range(1, RUNS + 1)]
    # everything still held back has arrived; the runs go on until one books no restore
    for n in range(RUNS + 1, 3 * RUNS + 3):
        restored.append(one_run(n, h(4 * END + n * RUN_EVERY_H), changes, events, runs))
        if not restored[-1]:
            break
    return events, runs, restored


@settings(max_examples=150, deadline=None)
@given(first=change_st, rest=st.lists(change_st, max_size=8))
def test_the_record_at_every_vouching_run_shows_what_it_listed(first: Change, rest: list[Change]) -> None:
    changes = month(first, rest)
    events, runs, _ = replay(changes)
    for earlier in runs:
        if vouched_row(KEY, earlier, events) is None:
            continue
        folded = folded_at(events, earlier.started_at)
        truth = truth_at(changes, earlier.started_at)
        assert folded is not None and folded.is_live
        assert (folded.state, dict(folded.size)) == (truth.state, size_of(truth)), earlier.started_at


@settings(max_examples=100, deadline=None)
@given(first=change_st, rest=st.lists(change_st, max_size=8))
def test_a_history_without_late_events_is_left_as_it_is(first: Change, rest: list[Change]) -> None:
    # every notification that arrives at all arrives before the next run
    prompt = [
        Change(c.at_h, c.state, c.large, None if c.delay_h is None else min(c.delay_h, 0.1))
        for c in month(first, rest)
    ]
    changes = [c for c in prompt if c.at_h % RUN_EVERY_H < RUN_EVERY_H - 0.2]
    events, runs, restored = replay(changes)
    assert not any(restored)
    assert vouched_restore(KEY, events, runs, h(10 * END)) is None
