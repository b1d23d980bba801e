"""Retention snapshots: folding a snapshot and the events kept gives what the whole history gave, for
the projection row, the lifecycle from the boundary on and the usage of every window after it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tally.core import (
    Event,
    EventInvalid,
    Interval,
    ResourceRow,
    StoredEvent,
    UsageLine,
    UsageWindow,
    fact_usage,
    lifecycle,
    parse_event,
    project,
    resource_usage,
    snapshot_for,
    usage_fact,
)
from tally.core.internals import is_snapshot, step

T0 = datetime(2026, 3, 1, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
SMALL = {"vcpus": 1, "ram_gb": 2, "disk_gb": 10, "flavor": "m1.small"}
LARGE = {"vcpus": 4, "ram_gb": 8, "disk_gb": 40, "flavor": "m1.large"}
TYPES = [
    "compute.instance.create.end",
    "sync.update",
    "compute.instance.power_off",
    "compute.instance.delete.end",
    "sync.create",
]


def ev(
    n: int, minute: int, event_type: str, state: str, size: Any, project_id: str, received: int
) -> StoredEvent:
    payload: dict[str, Any] = {}
    if "delete" not in event_type:
        payload["state"] = state
    if size is not None:
        payload["size"] = size
    at = T0 + minute * MINUTE
    event = Event(
        f"e{n}", at, event_type, "openstack", "c", "instance", "vm", project_id, "collector", payload
    )
    return StoredEvent(event, T0 + received * MINUTE)


history_strategy = st.lists(
    st.tuples(
        st.integers(0, 40),
        st.sampled_from(TYPES),
        st.sampled_from(["active", "shutoff"]),
        st.sampled_from([None, SMALL, LARGE]),
        st.sampled_from(["p1", "p2"]),
        st.integers(0, 60),
    ),
    min_size=1,
    max_size=14,
)


def build(spec: list[tuple[int, str, str, Any, str, int]]) -> list[StoredEvent]:
    out = []
    for n, (minute, event_type, state, size, project_id, received) in enumerate(spec):
        if "create" in event_type.split("."):
            size = size or SMALL
        out.append(ev(n, minute, event_type, state, size, project_id, received))
    return out


def retire(history: list[StoredEvent], boundary: datetime) -> list[StoredEvent]:
    """What the store holds once the months before ``boundary`` are detached."""
    snapshot = snapshot_for(history, boundary)
    kept = [e for e in history if e.event.timestamp >= boundary]
    return kept if snapshot is None else [snapshot, *kept]


def from_boundary(intervals: tuple[Interval, ...], boundary: datetime) -> list[Interval]:
    return [
        Interval(max(i.start, boundary), i.end, i.state, dict(i.size), i.project_id)
        for i in intervals
        if i.end is None or i.end > boundary
    ]


def same_row(a: ResourceRow | None, b: ResourceRow | None) -> bool:
    # The receipt and id of the newest event are no part of the row's equality; a replay reads them.
    if a is None or b is None:
        return a is b
    return a == b and (a.last_received_at, a.last_event_id) == (b.last_received_at, b.last_event_id)


def check_retired(
    history: list[StoredEvent], after: list[StoredEvent], boundary: datetime, *earlier: datetime
) -> None:
    whole = lifecycle(history)
    kept_events = [e for e in history if e.event.timestamp >= boundary]
    if not any(is_snapshot(e.event) for e in after) and not kept_events:
        return  # ended before the boundary with nothing after: the archive and the row keep it
    assert same_row(project(after), project(history))
    folded = lifecycle(after)
    assert from_boundary(folded.intervals, boundary) == from_boundary(whole.intervals, boundary)
    assert (folded.created_at, folded.deleted_at, folded.warnings) == (
        whole.created_at,
        whole.deleted_at,
        whole.warnings,
    )
    upto = T0 + 100 * MINUTE
    for start, end in ((0, 5), (0, 60), (3, 17), (10, 100)):
        window = UsageWindow(boundary + start * MINUTE, boundary + end * MINUTE, upto)
        bounds = (boundary, *earlier)
        assert receipts_blurred(resource_usage(after, window), history, bounds) == receipts_blurred(
            resource_usage(history, window), history, bounds
        )


def receipts_blurred(
    lines: dict[Any, UsageLine], history: list[StoredEvent], boundaries: tuple[datetime, ...]
) -> Any:
    """The lines, without their ``received_at`` in the one case the snapshot cannot keep it: an event
    dated at the boundary instant itself, received before the newest of the events retired (the
    snapshot must sort before it, so its receipt moves earlier; see core/_snapshot.py)."""
    for boundary in boundaries:
        before = [e.received_at for e in history if e.event.timestamp < boundary]
        at = [e.received_at for e in history if e.event.timestamp == boundary]
        if before and at and min(at) <= max(before):
            break
    else:
        return lines
    return {k: replace(v, received_at=None) for k, v in lines.items()}


@settings(max_examples=400)
@given(history_strategy, st.integers(1, 40))
def test_a_snapshot_and_the_kept_events_answer_as_the_whole_history(spec, minute) -> None:  # type: ignore[no-untyped-def]
    history = build(spec)
    boundary = T0 + minute * MINUTE
    check_retired(history, retire(history, boundary), boundary)


@settings(max_examples=200)
@given(history_strategy, st.integers(1, 20), st.integers(1, 20))
def test_a_second_retirement_folds_the_first_snapshot(spec, first, more) -> None:  # type: ignore[no-untyped-def]
    history = build(spec)
    b1, b2 = T0 + first * MINUTE, T0 + (first + more) * MINUTE
    once = retire(history, b1)
    check_retired(history, retire(once, b2), b2, b1)


@settings(max_examples=200)
@given(history_strategy, st.integers(1, 40))
def test_a_snapshot_beside_the_events_it_stands_for_changes_nothing(spec, minute) -> None:  # type: ignore[no-untyped-def]
    # Between the snapshots' insert and the detach, both are there: every answer stays as it was.
    history = build(spec)
    snapshot = snapshot_for(history, T0 + minute * MINUTE)
    both = history if snapshot is None else [*history, snapshot]
    assert same_row(project(both), project(history))
    assert lifecycle(both) == lifecycle(history)
    window = UsageWindow(T0, T0 + 50 * MINUTE, T0 + 100 * MINUTE)
    assert resource_usage(both, window) == resource_usage(history, window)


def test_a_posted_event_of_a_snapshot_type_is_an_ordinary_update() -> None:
    created = ev(1, 0, "compute.instance.create.end", "active", SMALL, "p1", 0)
    forged = StoredEvent(
        Event(
            "x",
            T0 + MINUTE,
            "tally.retention.snapshot",
            "openstack",
            "c",
            "instance",
            "vm",
            "p1",
            "collector",
            {"state": "shutoff", "row": {}},
        ),
        T0,
    )
    row = step(step(None, created), forged)
    assert row.state == "shutoff" and row.created_at == T0


def test_an_ended_key_with_nothing_after_the_boundary_needs_no_snapshot() -> None:
    history = [
        ev(1, 0, "compute.instance.create.end", "active", SMALL, "p1", 0),
        ev(2, 5, "compute.instance.delete.end", "active", None, "p1", 5),
    ]
    assert snapshot_for(history, T0 + 10 * MINUTE) is None
    live = snapshot_for(history[:1], T0 + 10 * MINUTE)
    assert live is not None and live.event.event_type == "tally.retention.snapshot"
    assert live.event.timestamp == T0 + 10 * MINUTE and live.received_at == T0


@settings(max_examples=300, deadline=None)
@given(history_strategy, st.integers(1, 40), st.integers(0, 30), st.integers(1, 70))
def test_the_exports_fast_fold_answers_a_retired_history_as_the_lifecycle(
    spec, minute, start, length
) -> None:  # type: ignore[no-untyped-def]
    """The CSV path folds tuples (``fact_usage``): over a snapshot and the events kept, it answers what
    ``resource_usage`` answers over the same stored events, whatever the window."""
    history = build(spec)
    after = retire(history, T0 + minute * MINUTE)
    window = UsageWindow(T0 + start * MINUTE, T0 + (start + length) * MINUTE, T0 + 100 * MINUTE)
    facts = [usage_fact(e) for e in after]
    assert fact_usage(facts, window) == resource_usage(after, window)


def test_a_posted_event_may_not_carry_a_retention_type() -> None:
    wire = ev(1, 0, "sync.update", "active", SMALL, "p1", 0).event.to_wire()
    parse_event(wire)
    with pytest.raises(EventInvalid, match=r"'tally.retention.snapshot' is reserved"):
        parse_event(wire | {"event_type": "tally.retention.snapshot"})
