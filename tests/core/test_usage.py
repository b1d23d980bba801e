"""Usage of one resource in a window: exact numbers, clipping, lines per project and state, and the
properties a bill relies on (windows add up, arrival order and ``as_of`` never change a settled answer)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tally.core import Event, StoredEvent, UsageLine, UsageWindow, resource_usage, seconds_text
from tally.core.internals import add_group_usage

T0 = datetime(2026, 3, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)


def ev(
    n: int,
    hours: float,
    event_type: str,
    *,
    state: str | None = "active",
    size: dict[str, Any] | None = None,
    project_id: str = "p1",
    received_h: float = 0.0,
) -> StoredEvent:
    payload: dict[str, Any] = {}
    if state is not None and "delete" not in event_type:
        payload["state"] = state
    if size is not None:
        payload["size"] = size
    event = Event(
        f"e{n}",
        T0 + hours * HOUR,
        event_type,
        "openstack",
        "c",
        "instance",
        "vm",
        project_id,
        "collector",
        payload,
    )
    return StoredEvent(event, T0 + received_h * HOUR)


def window(start_h: float, end_h: float, *, as_of_h: float | None = None) -> UsageWindow:
    as_of = None if as_of_h is None else T0 + as_of_h * HOUR
    return UsageWindow(T0 + start_h * HOUR, T0 + end_h * HOUR, T0 + 10_000 * HOUR, as_of)


def total(lines: dict[Any, UsageLine]) -> UsageLine:
    out = UsageLine()
    for line in lines.values():
        out.add(line)
    return out


def test_resize_and_delete_give_exact_seconds() -> None:
    events = [
        ev(1, 0, "compute.instance.create.end", size={"vcpus": 2, "ram_gb": 0.5, "flavor": "s"}),
        ev(2, 10, "compute.instance.resize.confirm.end", size={"vcpus": 4, "ram_gb": 0.1, "flavor": "l"}),
        ev(3, 20, "compute.instance.delete.end"),
    ]
    line = total(resource_usage(events, window(0, 24)))
    assert line.presence_us == 20 * 3600 * 10**6
    assert seconds_text(line.quantities["vcpus"]) == str(60 * 3600)
    # 0.5 * 10 h + 0.1 * 10 h = 6 GB-h exactly (floats would give 5.999999...).
    assert seconds_text(line.quantities["ram_gb"]) == str(6 * 3600)
    assert "flavor" not in line.quantities
    assert (line.creates, line.deletes) == (1, 1)
    clipped = total(resource_usage(events, window(8, 12)))
    assert seconds_text(clipped.quantities["vcpus"]) == str(12 * 3600)
    assert (clipped.creates, clipped.deletes) == (0, 0)


def test_open_span_stops_at_upto_and_history_without_create_counts_no_create() -> None:
    events = [ev(1, 2, "compute.instance.update", size={"vcpus": 1})]
    w = UsageWindow(T0, T0 + 24 * HOUR, T0 + 5 * HOUR)
    line = total(resource_usage(events, w))
    assert line.presence_us == 3 * 3600 * 10**6 and line.creates == 0


def test_lines_split_by_project_and_state_and_groups_by_flavor() -> None:
    events = [
        ev(1, 0, "compute.instance.create.end", size={"vcpus": 2, "flavor": "s"}),
        ev(2, 6, "compute.instance.power_off.end", state="shutoff"),
        ev(3, 12, "compute.instance.update", state="shutoff", project_id="p2"),
    ]
    lines = resource_usage(events, window(0, 24))
    assert {k: v.presence_us // 3_600_000_000 for k, v in lines.items()} == {
        ("p1", "active"): 6,
        ("p1", "shutoff"): 6,
        ("p2", "shutoff"): 12,
    }
    assert set(resource_usage(events, window(0, 24), project_id="p2")) == {("p2", "shutoff")}
    groups: dict[Any, UsageLine] = {}
    add_group_usage(
        groups, ("resource_type", "flavor", "volume_type"), "c", "instance", events, window(0, 24)
    )
    assert {k: v.presence_us // 3_600_000_000 for k, v in groups.items()} == {
        (("instance", "s", None), "active"): 6,
        (("instance", "s", None), "shutoff"): 18,
    }


def test_seconds_text() -> None:
    assert seconds_text(0) == "0"
    assert seconds_text(1) == "0.000001"
    assert seconds_text(1_500_000) == "1.5"
    assert seconds_text(Decimal("72000000000")) == "72000"


KINDS = ("compute.instance.create.end", "compute.instance.update", "compute.instance.delete.end")


@st.composite
def histories(draw: st.DrawFn) -> list[StoredEvent]:
    count = draw(st.integers(1, 8))
    out = []
    for n in range(count):
        kind = draw(st.sampled_from(KINDS))
        out.append(
            ev(
                n,
                draw(st.integers(0, 96)) / 4,
                kind,
                state=draw(st.sampled_from(["active", "shutoff"])),
                size={"vcpus": draw(st.integers(1, 4)), "ram_gb": draw(st.sampled_from([0.5, 1.25, 2]))}
                if kind != KINDS[2]
                else None,
                project_id=draw(st.sampled_from(["p1", "p2"])),
                received_h=draw(st.integers(0, 30)),
            )
        )
    return out


def _signature(lines: dict[Any, UsageLine]) -> dict[Any, tuple[int, dict[str, Decimal], int, int]]:
    return {
        k: (v.presence_us, v.quantities, v.creates, v.deletes)
        for k, v in lines.items()
        if v.presence_us or v.creates or v.deletes
    }


def _flat(line: UsageLine) -> tuple[int, dict[str, Decimal], int, int]:
    return (line.presence_us, {m: v for m, v in line.quantities.items() if v}, line.creates, line.deletes)


@settings(max_examples=150, deadline=None)
@given(histories(), st.integers(1, 23), st.randoms(use_true_random=False))
def test_windows_add_up_and_arrival_order_does_not_matter(
    events: list[StoredEvent], cut: int, rnd: Any
) -> None:
    whole = total(resource_usage(events, window(0, 24)))
    parts = total(resource_usage(events, window(0, cut)))
    parts.add(total(resource_usage(events, window(cut, 24))))
    assert _flat(parts) == _flat(whole)
    shuffled = list(events)
    rnd.shuffle(shuffled)
    assert _signature(resource_usage(shuffled, window(0, cut))) == _signature(
        resource_usage(events, window(0, cut))
    )


@settings(max_examples=100, deadline=None)
@given(histories(), st.integers(0, 30))
def test_as_of_is_the_answer_of_the_events_received_by_then(events: list[StoredEvent], cut: int) -> None:
    received = [e for e in events if e.received_at < T0 + cut * HOUR]
    assert _signature(resource_usage(events, window(0, 24, as_of_h=cut))) == _signature(
        resource_usage(received, window(0, 24))
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(histories(), min_size=1, max_size=4), st.integers(1, 23))
def test_groups_sum_the_resource_lines(resources: list[list[StoredEvent]], cut: int) -> None:
    w = window(0, cut)
    by_resource = UsageLine()
    groups: dict[Any, UsageLine] = {}
    for events in resources:
        by_resource.add(total(resource_usage(events, w)))
        add_group_usage(groups, ("resource_type", "project_id"), "c", "instance", events, w)
    assert _flat(total(groups)) == _flat(by_resource)
    assert {k[0][1] for k in groups} <= {"p1", "p2"}
