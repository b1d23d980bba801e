"""compare: equal data passes, a planted difference is found, poll-dated corrections are tolerated."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from tally.core import Event, Interval, StoredEvent
from tally.simulator import compare, stored_intervals
from tally.simulator.oracle import Oracle, OracleInterval, OracleResource

T0 = datetime(2026, 7, 1, tzinfo=UTC)
T1 = datetime(2026, 8, 1, tzinfo=UTC)
H = timedelta(hours=1)
P = "a" * 32
SMALL = {"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"}
MEDIUM = {"vcpus": 2, "ram_gb": 4, "disk_gb": 40, "flavor": "m1.medium"}
VM = "11111111-1111-4111-8111-111111111111"


def _oracle(*intervals: OracleInterval) -> Oracle:
    return Oracle("os-sim", 1, T0, T1, (OracleResource("instance", VM, "classic", tuple(intervals)),))


def _stored(
    *spans: tuple[datetime, datetime | None, str, dict[str, object]],
) -> dict[tuple[str, str], tuple[Interval, ...]]:
    return {("instance", VM): tuple(Interval(a, b, s, z, P) for a, b, s, z in spans)}


ORACLE = _oracle(
    OracleInterval(T0 + H, T0 + 5 * H, "active", P, SMALL),
    OracleInterval(T0 + 5 * H, T0 + 9 * H, "shutoff", P, SMALL),
)


def test_equal_data_passes() -> None:
    result = compare(
        ORACLE,
        _stored((T0 + H, T0 + 5 * H, "active", SMALL), (T0 + 5 * H, T0 + 9 * H, "shutoff", SMALL)),
        sync_interval=timedelta(minutes=10),
    )
    assert result.passed
    assert result.exact == 1 and result.off == 0
    assert result.seconds_off == 0
    assert result.oracle_seconds == {"instance": 8 * 3600}


def test_number_forms_do_not_matter() -> None:
    same = {"vcpus": 1, "ram_gb": 2.0, "disk_gb": 20, "flavor": "m1.small"}
    result = compare(
        ORACLE,
        _stored((T0 + H, T0 + 5 * H, "active", same), (T0 + 5 * H, T0 + 9 * H, "shutoff", same)),
        sync_interval=timedelta(0),
    )
    assert result.passed


def test_a_planted_size_difference_is_found() -> None:
    result = compare(
        ORACLE,
        _stored((T0 + H, T0 + 5 * H, "active", MEDIUM), (T0 + 5 * H, T0 + 9 * H, "shutoff", SMALL)),
        sync_interval=timedelta(minutes=10),
    )
    assert not result.passed
    [diff] = result.resources
    [d] = diff.differences
    assert (d.start, d.end, d.fields, d.tolerated) == (T0 + H, T0 + 5 * H, ("size",), False)
    assert result.to_doc()["resources"][0]["differences"][0]["oracle"]["size"]["flavor"] == "m1.small"


def test_a_missing_create_is_never_tolerated() -> None:
    result = compare(
        ORACLE,
        _stored(
            (T0 + H + timedelta(minutes=5), T0 + 5 * H, "active", SMALL),
            (T0 + 5 * H, T0 + 9 * H, "shutoff", SMALL),
        ),
        sync_interval=timedelta(hours=1),
    )
    assert not result.passed
    assert result.resources[0].differences[0].fields == ("presence",)


def test_a_delete_found_by_absence_is_tolerated_within_one_sync_interval() -> None:
    late = _stored(
        (T0 + H, T0 + 5 * H, "active", SMALL),
        (T0 + 5 * H, T0 + 9 * H + timedelta(minutes=8), "shutoff", SMALL),
    )
    result = compare(ORACLE, late, sync_interval=timedelta(minutes=10))
    assert result.passed and result.tolerated == 1
    assert result.seconds_off == 8 * 60
    doc = result.to_doc()["resources"][0]
    assert doc["within_tolerance"] and doc["differences"][0]["note"].startswith("poll-dated")
    too_late = _stored(
        (T0 + H, T0 + 5 * H, "active", SMALL),
        (T0 + 5 * H, T0 + 9 * H + timedelta(minutes=12), "shutoff", SMALL),
    )
    assert not compare(ORACLE, too_late, sync_interval=timedelta(minutes=10)).passed


def test_a_poll_dated_update_is_tolerated() -> None:
    late = _stored(
        (T0 + H, T0 + 5 * H + timedelta(minutes=3), "active", SMALL),
        (T0 + 5 * H + timedelta(minutes=3), T0 + 9 * H, "shutoff", SMALL),
    )
    result = compare(ORACLE, late, sync_interval=timedelta(minutes=5))
    assert result.passed and result.tolerated == 1
    assert result.resources[0].differences[0].fields == ("state",)


def test_two_unbooked_changes_inside_one_sync_interval_are_tolerated_until_the_poll() -> None:
    # Neither change booked by a notification (a volume offered for transfer, then accepted with the
    # accept lost): the store stays on the facts before both until the poll.
    oracle = _oracle(
        OracleInterval(T0 + H, T0 + 5 * H, "active", P, SMALL),
        OracleInterval(T0 + 5 * H, T0 + 5 * H + timedelta(minutes=20), "paused", P, SMALL),
        OracleInterval(T0 + 5 * H + timedelta(minutes=20), T0 + 9 * H, "shutoff", P, SMALL),
    )
    poll = T0 + 6 * H
    result = compare(
        oracle,
        _stored((T0 + H, poll, "active", SMALL), (poll, T0 + 9 * H, "shutoff", SMALL)),
        sync_interval=H,
    )
    assert result.passed and result.tolerated == 1
    assert [d.fields for d in result.resources[0].differences] == [("state",), ("state",)]
    later = poll + timedelta(minutes=1)
    late = _stored((T0 + H, later, "active", SMALL), (later, T0 + 9 * H, "shutoff", SMALL))
    assert not compare(oracle, late, sync_interval=H).passed


def test_a_stored_resource_the_oracle_lacks_is_a_difference() -> None:
    stored = {
        **_stored((T0 + H, T0 + 5 * H, "active", SMALL), (T0 + 5 * H, T0 + 9 * H, "shutoff", SMALL)),
        ("volume", "v"): (Interval(T0, None, "available", {"size_gb": 1, "type": "ssd"}, P),),
    }
    result = compare(ORACLE, stored, sync_interval=timedelta(hours=1))
    assert not result.passed
    assert result.stored_seconds["volume"] == (T1 - T0).total_seconds()


def _event(
    kind: str, at: datetime, n: int, state: str = "active", size: dict[str, object] | None = None
) -> StoredEvent:
    payload: dict[str, object] = {} if kind.endswith("delete.end") else {"state": state}
    if size is not None:
        payload["size"] = size
    event = Event(f"e{n}", at, kind, "openstack", "os-sim", "instance", VM, P, payload=payload)
    return StoredEvent(event, at)


@settings(max_examples=30, deadline=None)
@given(st.permutations(range(4)), st.lists(st.integers(0, 3), max_size=3))
def test_arrival_order_and_duplicates_do_not_change_the_verdict(order: list[int], dups: list[int]) -> None:
    events = [
        _event("compute.instance.create.end", T0 + H, 0, size=SMALL),
        _event("compute.instance.power_off", T0 + 5 * H, 1, "shutoff"),
        _event("compute.instance.power_on", T0 + 6 * H, 2),
        _event("compute.instance.delete.end", T0 + 9 * H, 3),
    ]
    oracle = _oracle(
        OracleInterval(T0 + H, T0 + 5 * H, "active", P, SMALL),
        OracleInterval(T0 + 5 * H, T0 + 6 * H, "shutoff", P, SMALL),
        OracleInterval(T0 + 6 * H, T0 + 9 * H, "active", P, SMALL),
    )
    arrived = [events[i] for i in order] + [replace(events[i]) for i in dups]
    result = compare(oracle, stored_intervals(arrived, cloud="os-sim"), sync_interval=timedelta(0))
    assert result.passed and result.exact == 1
