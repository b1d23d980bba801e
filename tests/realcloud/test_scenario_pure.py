"""The real-cloud scenario's pure parts, without a cloud (so in the ordinary suite): the seeded plan
covers the whole class for every seed, and the oracle dates a recorded change at the store's
platform-dated booking inside its window and nowhere else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scenario_oracle import dated, evidence_lines, judge, stored_changes
from scenario_plan import FAULTS, IMAGE_OPS, LB_OPS, SERVER_OPS, VOLUME_OPS, draw_plan, plan_from_env
from scenario_records import (
    MADE_BY,
    SLACK,
    Change,
    Records,
    Snapshots,
    image_changes,
    lb_changes,
    made_after,
    read_ips,
    server_gone,
    volume_changes,
    window,
)

from tally.core import Interval, StoredEvent, format_instant, parse_event
from tally.simulator._runs import SyncRun
from tally.simulator.compare import Comparison, StoredRecord

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


# -- a change recorded in the second of the previous phase's sync ------------------------------------

LB = "lb-1"
PROJECT = "p"


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _lb_event(seconds: float, event_type: str, run: str | None = None, **size: int) -> StoredEvent:
    payload: dict[str, object] = {"state": "active", "size": size} if size else {}
    if run is not None:
        payload["provider"] = {"reason": "drift", "sync_run_id": run}
    event = parse_event({
        "event_id": f"{event_type}-{seconds}", "timestamp": format_instant(_at(seconds)),
        "event_type": event_type, "platform": "openstack", "cloud": "c", "resource_type": "loadbalancer",
        "resource_id": LB, "project_id": PROJECT, "source": "reconciliation" if run else "collector",
        "payload": payload,
    })  # fmt: skip
    return StoredEvent(event, _at(seconds))


def _lb_row(listeners: dict[str, str], pools: dict[str, str]) -> dict[str, object]:
    return {"status": "ACTIVE", "created_at": "2026-12-03T14:00:00", "updated_at": "2026-12-03T14:00:00",
            "listeners": listeners, "pools": pools}  # fmt: skip


def _ci_failure(began: list[datetime]) -> tuple[Records, StoredRecord, Comparison]:
    """The real-cloud lane's failure, replayed: phase 1 adds a listener (recorded at 14:00:05), its sync
    starts at 08.031883 and sees it; phase 2 begins at 08.5 and adds a pool, which octavia records at
    14:00:08 (08.6 to the second); phase 2's sync at 10.991847 books it. No notification names either."""
    listener, pool = {"l-1": "2026-12-03T14:00:05"}, {"p-1": "2026-12-03T14:00:08"}
    snapshots = Snapshots(admin=None, project=PROJECT, began=began)
    snapshots.lbs = [{LB: _lb_row({}, {})}, {LB: _lb_row(listener, {})}, {LB: _lb_row(listener, pool)}, {}]
    records = Records()
    lb_changes(records, PROJECT, snapshots, {LB: _at(20)})
    history = (
        _lb_event(0.4, "octavia.loadbalancer.create.end", listeners=0, pools=0),
        _lb_event(8.031883, "sync.update", "r1", listeners=1, pools=0),
        _lb_event(10.991847, "sync.update", "r2", listeners=1, pools=1),
        _lb_event(20.3, "octavia.loadbalancer.delete.end"),
    )
    runs = tuple(
        SyncRun(run_id, _at(at), True, frozenset({"loadbalancer"}), frozenset())
        for run_id, at in (("r0", 1.2), ("r1", 8.031883), ("r2", 10.991847), ("r3", 21.5))
    )
    stored = StoredRecord({("loadbalancer", LB): history}, runs)
    _, comparison = judge(records, stored, cloud="c", seed=1, project=PROJECT, period=(_at(-1), _at(25)))
    return records, stored, comparison


def test_a_pool_recorded_in_the_second_of_the_previous_sync_but_made_after_it_is_not_due_to_that_sync() -> (
    None
):
    phases = [_at(-0.5), _at(4.5), _at(8.5), _at(15)]
    records, stored, comparison = _ci_failure(phases)
    assert comparison.off == 0 and evidence_lines(comparison, records, stored) == []
    assert {d.cause for r in comparison.resources for d in r.differences} == {"poll-dated update"}
    # Without the phase's start the pool is placed at 14:00:08, before phase 1's sync: the lane's flake.
    _, _, unbounded = _ci_failure(phases[:2])
    assert unbounded.off == 1 and unbounded.off_by_cause == {"wrong size": 1}


def test_a_resource_off_prints_the_oracles_changes_and_the_stores_events_with_their_sources() -> None:
    records, stored, comparison = _ci_failure([_at(-0.5), _at(4.5)])
    lines = evidence_lines(comparison, records, stored, [_at(-0.5), _at(4.5)])
    assert lines[1] == f"  loadbalancer {LB}"
    assert lines[4] == (
        "    oracle [2026-12-03T14:00:08Z, 2026-12-03T14:00:10Z) dated 2026-12-03T14:00:08Z: "
        "active listeners=1,pools=1 <- octavia pool created_at (first seen after phase 2)"
    )
    assert lines[7] == (
        "    store  2026-12-03T14:00:08.031883Z sync.update [reconciliation: drift run r1] "
        "state=active size={'listeners': 1, 'pools': 0} (received 2026-12-03T14:00:08.031883Z)"
    )
    assert lines[-2].startswith("  runs: r0 at 2026-12-03T14:00:01.2Z, r1 at 2026-12-03T14:00:08.031883Z, ")
    assert lines[-1] == "  phases began: 2026-12-03T13:59:59.5Z, 2026-12-03T14:00:04.5Z"


@pytest.mark.parametrize(
    "source", ["cinder updated_at", "cinder deleted_at", "neutron created_at", "octavia"]
)
@given(
    poll=st.floats(min_value=0.0, max_value=0.98),
    gap=st.floats(min_value=0.001, max_value=0.5),
)
def test_a_change_of_any_type_made_after_a_poll_in_its_recorded_second_is_placed_after_the_poll(
    source: str, poll: float, gap: float
) -> None:
    """Whatever type's record: the record floors a change made at ``began + x`` to its second; a
    previous sync polled inside that second before the phase began. The window opens after the poll."""
    second = T0 + timedelta(seconds=30)
    polled = second + timedelta(seconds=poll)
    began = min(polled + timedelta(seconds=gap), second + timedelta(seconds=0.999))
    snapshots = Snapshots(admin=None, project=PROJECT, began=[T0, began])
    records = Records()
    text = second.strftime("%Y-%m-%dT%H:%M:%S")
    if source.startswith("cinder"):
        row = {"status": "available", "size": 1, "type": "t", "updated_at": text}
        snapshots.volumes = [{"v": row}, {"v": {**row, "size": 2}} if source.endswith("updated_at") else {}]
        volume_changes(
            records, PROJECT, snapshots, "v", T0, second if source.endswith("deleted_at") else None
        )
        key = ("volume", "v")
    elif source.startswith("neutron"):
        snapshots.ips = [{}, {"ip": {"created_at": text, "address": "203.0.113.9"}}]
        read_ips(records, PROJECT, snapshots, {})
        key = ("floating_ip", "ip")
    else:
        snapshots.lbs = [{LB: _lb_row({}, {})}, {LB: _lb_row({"l": text}, {})}]
        lb_changes(records, PROJECT, snapshots, {})
        key = ("loadbalancer", LB)
    change = records.changes[key][-1]
    assert change.lo >= began > polled and change.hi == second + SLACK


def test_a_row_in_a_phases_first_second_opens_at_its_start_when_no_other_phase_made_one() -> None:
    second = T0 + timedelta(seconds=30)
    began = [T0, second - timedelta(seconds=5), second + timedelta(seconds=0.4)]
    stop = MADE_BY["stop"]
    assert made_after(second, stop, ("create", "", "stop"), began) == began[2]
    # The phase before still ran in that second and stopped the server too: the row cannot tell.
    assert made_after(second, MADE_BY["resize"], ("create", "resize-revert", "resize-confirm"), began) is None
    # Only the phase before makes such a change: the row is its, and its own second stands.
    assert made_after(second, stop, ("create", "stop", "start"), began) is None
    # No phase began inside the row's second: nothing to say.
    assert made_after(second + timedelta(seconds=1), stop, ("create", "", "stop"), began) is None
    # An operation of a phase that ended before the second is no rival.
    long_ago = [T0, T0 + timedelta(seconds=1), second + timedelta(seconds=0.4)]
    assert made_after(second, stop, ("stop", "", "stop"), long_ago) == long_ago[2]


@given(poll=st.floats(min_value=0.0, max_value=0.98), gap=st.floats(min_value=0.001, max_value=0.5))
def test_an_image_deleted_just_after_a_poll_in_its_recorded_second_is_placed_after_the_poll(
    poll: float, gap: float
) -> None:
    second = T0 + timedelta(seconds=30)
    polled = second + timedelta(seconds=poll)
    began = [T0, min(polled + timedelta(seconds=gap), second + timedelta(seconds=0.999))]
    records = Records()
    row: list[str | None] = ["img", None, "2026-12-03T14:00:00", second.strftime("%Y-%m-%dT%H:%M:%S"), None]
    image_changes(records, PROJECT, [row], {"img": ("create", "delete")}, began)
    gone = records.changes[("image", "img")][-1]
    assert gone.facts is None and gone.lo == began[1] > polled


# -- a delete nova reports at its stored second, inside which the deleting phase began --------------


def _gone_by_sync(fraction: float, notified: float | None, reported: bool = True) -> Comparison:
    """The real-cloud lane's flake of 2026-12-04, for any point of the second: a server created at
    T0 + 10.6 is deleted by a phase that began at ``fraction`` into second 30; nova stores 14:00:30 as
    its ``terminated_at``; the delete notification arrives ``notified`` s after the phase began, or is
    lost (None), and a run at 33.5 finds the server in the deleted-servers listing and books it at 30."""
    second = _at(30)
    began = [_at(-30), _at(8), second + timedelta(seconds=fraction)]
    records = Records()
    records.add(("instance", "i-1"), Change(*window(_at(10)), ("active", "p", {"vcpus": 1}), "nova create"))
    gone = server_gone(second, [second + timedelta(seconds=1)], ("create", "", "delete"), began)
    records.add(("instance", "i-1"), gone if reported else Change(gone.lo, gone.hi, None, gone.what))
    history = [
        _event(_at(10.6), "compute.instance.create.end", "collector", state="active", size={"vcpus": 1}),
        _event(
            second,
            "sync.delete",
            "reconciliation",
            provider={"reason": "reported delete", "sync_run_id": "r2"},
        ),
    ]
    if notified is not None:
        history.append(
            _event(began[2] + timedelta(seconds=notified), "compute.instance.delete.end", "collector")
        )
    runs = tuple(
        SyncRun(run_id, _at(at), True, frozenset({"instance"}), frozenset())
        for run_id, at in (("r1", 20.0), ("r2", 33.5))
    )
    stored = StoredRecord({("instance", "i-1"): tuple(history)}, runs)
    _, comparison = judge(records, stored, cloud="c", seed=1, project="p", period=(_at(0), _at(60)))
    return comparison


@given(
    fraction=st.floats(min_value=0.001, max_value=0.999),
    notified=st.none() | st.floats(min_value=3.6, max_value=20.0),
)
def test_a_reported_delete_at_novas_stored_second_is_exact_though_the_phase_began_inside_it(
    fraction: float, notified: float | None
) -> None:
    comparison = _gone_by_sync(fraction, notified)
    assert comparison.off == 0 and comparison.resources == ()


def test_without_the_reported_second_the_same_store_is_a_delete_early() -> None:
    comparison = _gone_by_sync(0.322193, 4.0, reported=False)
    assert comparison.off == 1 and comparison.off_by_cause == {"delete early": 1}
