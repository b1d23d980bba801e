"""The real-cloud scenario's pure parts, without a cloud (so in the ordinary suite): the seeded plan
covers the whole class for every seed, and the oracle dates a recorded change at the store's
platform-dated booking inside its window and nowhere else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from scenario_oracle import dated, stored_changes
from scenario_plan import FAULTS, IMAGE_OPS, LB_OPS, SERVER_OPS, VOLUME_OPS, draw_plan, plan_from_env
from scenario_records import Change, window

from tally.core import Interval, StoredEvent, parse_event

T0 = datetime(2026, 12, 3, 14, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize("seed", range(40))
def test_every_seed_covers_every_operation_and_fault(seed: int) -> None:
    plan = draw_plan(seed)
    ops = {kind: {op for steps in by_name.values() for op in steps} for kind, by_name in plan.ops.items()}
    assert set(SERVER_OPS) <= ops["server"] and set(VOLUME_OPS) <= ops["volume"]
    assert set(IMAGE_OPS) <= ops["image"] and set(LB_OPS) <= ops["lb"] and "delete" in ops["ip"]
    assert set(FAULTS) <= set(plan.faults) and len(plan.faults) == plan.size.phases + 1
    assert plan.ops["server"]["srv-0"] == ("",) * plan.size.phases  # the anchor volumes attach to


def test_the_same_seed_draws_the_same_plan_and_seeds_differ() -> None:
    assert draw_plan(3) == draw_plan(3)
    assert len({repr((draw_plan(s).ops, draw_plan(s).faults)) for s in range(10)}) == 10


def test_a_bad_seed_or_size_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TALLY_REALCLOUD_SEED", "one")
    with pytest.raises(ValueError, match="TALLY_REALCLOUD_SEED"):
        plan_from_env()
    monkeypatch.setenv("TALLY_REALCLOUD_SEED", "1")
    monkeypatch.setenv("TALLY_REALCLOUD_SIZE", "huge")
    with pytest.raises(ValueError, match="TALLY_REALCLOUD_SIZE"):
        plan_from_env()


def _event(at: datetime, event_type: str, source: str, **payload: object) -> StoredEvent:
    event = parse_event({
        "event_id": f"e-{at.timestamp()}-{event_type}", "timestamp": at.isoformat().replace("+00:00", "Z"),
        "event_type": event_type, "platform": "openstack", "cloud": "c", "resource_type": "instance",
        "resource_id": "i-1", "project_id": "p", "source": source, "payload": payload,
    })  # fmt: skip
    return StoredEvent(event, at)


def test_a_change_is_dated_at_a_platform_booking_in_its_window_and_never_at_a_poll() -> None:
    created = T0 + timedelta(seconds=1, microseconds=400_000)
    polled = T0 + timedelta(seconds=30)
    intervals = (
        Interval(created, polled, "active", {"vcpus": 1}, "p"),
        Interval(polled, None, "shutoff", {"vcpus": 1}, "p"),
    )
    events = (
        _event(created, "compute.instance.create.end", "collector", state="active", size={"vcpus": 1}),
        _event(polled, "sync.update", "reconciliation", state="shutoff",
               provider={"reason": "drift", "sync_run_id": "r"}),
    )  # fmt: skip
    points = stored_changes(intervals, events)
    assert [at for at, _ in points] == [created]  # the poll's booking is never a platform instant
    start = Change(*window(T0), ("active", "p", {"vcpus": 1}), "build")
    stop = Change(*window(T0 + timedelta(seconds=10)), ("shutoff", "p", {"vcpus": 1}), "stop")
    assert dated([start, stop], points) == [(created, start.facts), (stop.lo, stop.facts)]
    late = Change(*window(T0 - timedelta(seconds=3)), ("active", "p", {"vcpus": 1}), "build")
    assert dated([late], points) == [(late.lo, late.facts)]  # 4.4 s after its record: not pinned
    other = Change(*window(T0), ("active", "p", {"vcpus": 2}), "build")
    assert dated([other], points) == [(other.lo, other.facts)]  # other facts: not pinned
