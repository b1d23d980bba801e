"""The export's fast fold (``fact_usage``, ``add_fact_group_usage``) answers exactly what the lifecycle's
(``resource_usage``, ``add_group_usage``) answers, over generated histories: any arrival order, ties
of instants, deletes and revivals, updates after a delete, project moves, sizes that change type or
vanish, windows that cut anywhere, ``as_of``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tally.core import (
    USAGE_GROUPS,
    Event,
    GroupKey,
    StoredEvent,
    UsageFact,
    UsageLine,
    UsageWindow,
    add_fact_group_usage,
    fact_usage,
    resource_usage,
    seconds_text,
    usage_fact,
)
from tally.core.internals import add_group_usage

T0 = datetime(2026, 3, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
TYPES = (
    "compute.instance.create.end",
    "compute.instance.update",
    "compute.instance.resize.confirm.end",
    "compute.instance.delete.end",
)
# A small pool, so that a history often comes back to a size it had (the merge rule), including one
# equal in value but not in type (2 and 2.0), fractions, a 64-bit overflow, booleans and texts.
SIZES = st.sampled_from(
    [
        None,
        [1, 2],  # not a mapping: the fold keeps the size it had
        {},
        {"vcpus": 2, "flavor": "s"},
        {"vcpus": 2.0, "flavor": "s"},
        {"vcpus": 0.5, "ram_gb": 0.1, "flavor": "l"},
        {"vcpus": 10**20, "on": True, "ram_gb": 2.5},
    ]
)
STATES = st.sampled_from([None, "active", "shutoff", 5])


@st.composite
def histories(draw: st.DrawFn) -> list[StoredEvent]:
    count = draw(st.integers(1, 8))
    out: list[StoredEvent] = []
    for n in range(count):
        payload: dict[str, Any] = {}
        state, size = draw(STATES), draw(SIZES)
        if state is not None:
            payload["state"] = state
        if size is not None:
            payload["size"] = size
        # Few distinct instants, so that ties of timestamp (and of received_at) are common.
        at = (
            T0
            + draw(st.sampled_from([0, 1, 1.5, 2, 5, 9])) * HOUR
            + draw(st.sampled_from([0, 1])) * (timedelta(microseconds=1))
        )
        event = Event(
            f"e{draw(st.integers(0, 20))}-{n}",
            at,
            draw(st.sampled_from(TYPES)),
            "openstack",
            "c",
            "instance",
            "vm",
            draw(st.sampled_from(["p1", "p2"])),
            "collector",
            payload,
        )
        out.append(StoredEvent(event, T0 + draw(st.sampled_from([0, 3, 6, 12])) * HOUR))
    return out


@st.composite
def windows(draw: st.DrawFn) -> UsageWindow:
    start = draw(st.sampled_from([-1, 0, 1, 1.5, 3]))
    end = start + draw(st.sampled_from([0.5, 1, 4, 8, 20]))
    upto = draw(st.sampled_from([2, 7, 100]))
    as_of = draw(st.sampled_from([None, 1, 4, 7, 20]))
    return UsageWindow(
        T0 + start * HOUR, T0 + end * HOUR, T0 + upto * HOUR, None if as_of is None else T0 + as_of * HOUR
    )


def _signature(lines: dict[Any, UsageLine]) -> dict[Any, Any]:
    """Every number with its type and its text: equal values of another type would print otherwise."""
    return {
        key: (
            line.presence_us,
            sorted((m, type(v).__name__, seconds_text(v)) for m, v in line.quantities.items()),
            line.creates,
            line.deletes,
            line.received_at,
        )
        for key, line in lines.items()
    }


@settings(max_examples=600, deadline=None)
@given(histories(), windows(), st.sampled_from([None, "p1", "p2"]))
def test_fact_usage_is_the_lifecycle_usage(
    events: list[StoredEvent], window: UsageWindow, project_id: str | None
) -> None:
    facts = [usage_fact(e) for e in events]
    expected = resource_usage(events, window, project_id=project_id)
    got = fact_usage(facts, window, project_id=project_id)
    assert got == expected
    assert _signature(got) == _signature(expected)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(histories(), min_size=1, max_size=3),
    windows(),
    st.lists(st.sampled_from(sorted(USAGE_GROUPS)), max_size=3, unique=True),
    st.sampled_from([None, "p2"]),
)
def test_fact_group_usage_is_the_lifecycle_group_usage(
    resources: list[list[StoredEvent]], window: UsageWindow, group_by: list[str], project_id: str | None
) -> None:
    expected: dict[GroupKey, UsageLine] = {}
    got: dict[GroupKey, UsageLine] = {}
    columns = ("resource_type", *group_by)
    for events in resources:
        add_group_usage(expected, columns, "c", "instance", events, window, project_id=project_id)
        facts = [usage_fact(e) for e in events]
        add_fact_group_usage(got, columns, "c", "instance", facts, window, project_id=project_id)
    assert got == expected
    assert _signature(got) == _signature(expected)


def test_a_resize_booked_from_facts() -> None:
    """The issue's known history, through the fast path: 20 h, 60 vCPU-h, and the clipped sub-window."""
    size2, size4 = {"vcpus": 2, "flavor": "s"}, {"vcpus": 4, "flavor": "l"}
    facts: list[UsageFact] = [
        (T0, T0, "e1", "compute.instance.create.end", "p1", "active", size2),
        (T0 + 10 * HOUR, T0, "e2", "compute.instance.resize.confirm.end", "p1", "active", size4),
        (T0 + 20 * HOUR, T0, "e3", "compute.instance.delete.end", "p1", None, None),
    ]
    whole = UsageWindow(T0, T0 + 24 * HOUR, T0 + 100 * HOUR)
    [line] = fact_usage(facts, whole).values()
    assert (seconds_text(line.presence_us), seconds_text(line.quantities["vcpus"])) == ("72000", "216000")
    assert (line.creates, line.deletes) == (1, 1)
    [cut] = fact_usage(facts, UsageWindow(T0 + 8 * HOUR, T0 + 12 * HOUR, T0 + 100 * HOUR)).values()
    assert seconds_text(cut.quantities["vcpus"]) == str((2 * 2 + 2 * 4) * 3600)
    assert (cut.creates, cut.deletes) == (0, 0)


def test_a_span_of_no_length_rejoins_the_interval_around_it() -> None:
    """Sized 2, then for no time at all otherwise, then 2.0: one interval, still sized by the integer
    (the lifecycle's merge rule), so the vCPU-seconds stay an integer on both paths."""
    kinds = ("compute.instance.create.end", "compute.instance.update", "compute.instance.update")
    sizes = ({"vcpus": 2}, {"vcpus": 8}, {"vcpus": 2.0})
    events = [
        StoredEvent(
            Event(
                f"e{n}",
                T0 + (n > 0) * HOUR,
                kind,
                "openstack",
                "c",
                "instance",
                "vm",
                "p1",
                "collector",
                {"state": "active", "size": size},
            ),
            T0,
        )
        for n, (kind, size) in enumerate(zip(kinds, sizes, strict=True))
    ]
    w = UsageWindow(T0, T0 + 4 * HOUR, T0 + 100 * HOUR)
    got, expected = fact_usage([usage_fact(e) for e in events], w), resource_usage(events, w)
    assert _signature(got) == _signature(expected)
    assert type(got[("p1", "active")].quantities["vcpus"]) is int
