"""The timeline fold: order, intervals, terminal deletes, and order independence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tally.core import Event, StoredEvent, advance, lifecycle, needs_replay, project
from tally.core.internals import HISTORY_STARTS_WITHOUT_CREATE

T0 = datetime(2026, 7, 1, tzinfo=UTC)


def ev(
    n: int,
    minutes: float,
    event_type: str,
    state: str | None = None,
    size: dict[str, Any] | None = None,
    project_id: str = "p1",
    received: float = 0.0,
) -> StoredEvent:
    payload: dict[str, Any] = {}
    if state is not None:
        payload["state"] = state
    if size is not None:
        payload["size"] = size
    event = Event(
        event_id=f"e{n}",
        timestamp=T0 + timedelta(minutes=minutes),
        event_type=event_type,
        platform="openstack",
        cloud="c",
        resource_type="instance",
        resource_id="r",
        project_id=project_id,
        payload=payload,
    )
    return StoredEvent(event, T0 + timedelta(minutes=received))


SMALL = {"vcpus": 1}
LARGE = {"vcpus": 4}


def test_changes_open_intervals_and_delete_closes() -> None:
    history = [
        ev(1, 0, "compute.instance.create.end", "active", SMALL),
        ev(2, 10, "compute.instance.power_off", "shutoff"),
        ev(3, 20, "compute.instance.resize.end", "shutoff", LARGE),
        ev(4, 30, "compute.instance.power_on", "active", project_id="p2"),
        ev(5, 40, "compute.instance.delete.end"),
    ]
    life = lifecycle(reversed(history))
    assert [(i.state, dict(i.size), i.project_id) for i in life.intervals] == [
        ("active", SMALL, "p1"),
        ("shutoff", SMALL, "p1"),
        ("shutoff", LARGE, "p1"),
        ("active", LARGE, "p2"),
    ]
    assert life.intervals[-1].end == T0 + timedelta(minutes=40)
    assert life.created_at == T0 and life.deleted_at == T0 + timedelta(minutes=40)
    assert life.warnings == ()


def test_an_unchanged_update_opens_nothing_and_zero_length_is_dropped() -> None:
    life = lifecycle(
        [
            ev(1, 0, "compute.instance.create.end", "active", SMALL),
            ev(2, 5, "sync.update", "active", SMALL),
            ev(3, 10, "sync.update", "shutoff"),
            ev(4, 10, "sync.update", "active", received=1),
        ]
    )
    assert [(i.start, i.end, i.state) for i in life.intervals] == [(T0, None, "active")]


def test_history_without_create_warns() -> None:
    life = lifecycle([ev(1, 0, "sync.update", "active", SMALL)])
    assert life.warnings == (HISTORY_STARTS_WITHOUT_CREATE,)


def test_a_late_update_never_revives_a_deleted_resource() -> None:
    events = [
        ev(1, 0, "compute.instance.create.end", "active", SMALL),
        ev(2, 10, "compute.instance.delete.end"),
        ev(3, 20, "sync.update", "active", LARGE),
    ]
    row = project(events)
    assert row is not None and row.state == "deleted" and row.deleted_at == T0 + timedelta(minutes=10)
    assert lifecycle(events).intervals[-1].end == T0 + timedelta(minutes=10)


def test_an_explicit_create_after_the_delete_revives() -> None:
    events = [
        ev(1, 0, "compute.instance.create.end", "active", SMALL),
        ev(2, 10, "compute.instance.delete.end"),
        ev(3, 20, "sync.create", "active", LARGE),
    ]
    row = project(events)
    assert row is not None and row.state == "active" and row.deleted_at is None and row.created_at == T0
    assert [i.start for i in lifecycle(events).intervals] == [T0, T0 + timedelta(minutes=20)]


def test_first_delete_stands() -> None:
    row = project(
        [
            ev(1, 0, "compute.instance.create.end", "active", SMALL),
            ev(2, 10, "sync.delete"),
            ev(3, 20, "compute.instance.delete.end"),
        ]
    )
    assert row is not None and row.deleted_at == T0 + timedelta(minutes=10)
    assert row.last_event_type == "compute.instance.delete.end"


TYPES = ["compute.instance.create.end", "sync.update", "compute.instance.delete.end", "sync.create"]
history_strategy = st.lists(
    st.tuples(
        st.integers(0, 30),
        st.sampled_from(TYPES),
        st.sampled_from(["active", "shutoff"]),
        st.sampled_from([None, SMALL, LARGE]),
        st.sampled_from(["p1", "p2"]),
        st.integers(0, 3),
    ),
    min_size=1,
    max_size=12,
)


def build(spec: list[tuple[int, str, str, dict[str, Any] | None, str, int]]) -> list[StoredEvent]:
    out = []
    for n, (minute, event_type, state, size, project_id, received) in enumerate(spec):
        if event_type.endswith("create") or event_type.endswith("create.end"):
            size = size or SMALL
        out.append(ev(n, minute, event_type, state, size, project_id, received))
    return out


@given(history_strategy, st.randoms(use_true_random=False), st.integers(0, 12))
def test_any_order_and_split_gives_the_same_row_and_intervals(spec, rnd, split) -> None:  # type: ignore[no-untyped-def]
    events = build(spec)
    shuffled = events + events[: len(events) // 2]  # duplicates arrive too; the store drops them by id
    rnd.shuffle(shuffled)
    unique = list({e.event.event_id: e for e in shuffled}.values())
    first, rest = unique[:split], unique[split:]
    row = project(first)
    row = project(unique) if needs_replay(row, rest) else advance(row, rest)
    assert row == project(events)
    assert lifecycle(unique) == lifecycle(events)
