"""compare: the strict judge. Exact data passes; the one difference the seeds accept (previous facts until
a poll-dated correction of the first run that could book it) is tolerated and names its correction and
run; every other difference is off with its cause; quantities weigh what a bill would be off by."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tally.core import Event, StoredEvent
from tally.simulator import compare, stored_record
from tally.simulator._runs import SyncRun
from tally.simulator._verdict import (
    BY_A_FAILED_RUN,
    CAUGHT_UP_BEFORE_ANY_RUN,
    CREATE_AT_PLATFORM_INSTANT,
    CREATE_EARLY,
    CREATE_LATE,
    DEFERRING_RUN,
    DELETE_BY_ABSENCE,
    DELETE_LATE,
    LATER_RUN,
    NO_RUN_COULD_BOOK,
    NOT_AT_RUN_INSTANT,
    NOT_CORRECTED,
    NOT_IN_ORACLE,
    POLL_DATED_UPDATE,
    REPORTED_DELETE_OFF,
)
from tally.simulator.compare import Comparison
from tally.simulator.oracle import Oracle, OracleInterval, OracleResource

T0 = datetime(2026, 7, 1, tzinfo=UTC)
T1 = datetime(2026, 8, 1, tzinfo=UTC)
H = timedelta(hours=1)
M = timedelta(minutes=1)
P = "a" * 32
SMALL = {"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"}
MEDIUM = {"vcpus": 2, "ram_gb": 4, "disk_gb": 40, "flavor": "m1.medium"}
VM = "11111111-1111-4111-8111-111111111111"
TYPES = frozenset({"instance", "volume", "floating_ip", "image", "loadbalancer"})
NO_SETTLE = timedelta(0)


def vm_oracle(*intervals: OracleInterval, faults: tuple[str, ...] = ()) -> Oracle:
    """A month whose oracle holds the one instance ``VM`` with these intervals."""
    return Oracle("os-sim", 1, T0, T1, (OracleResource("instance", VM, "classic", intervals, faults=faults),))


ORACLE = vm_oracle(
    OracleInterval(T0 + H, T0 + 5 * H, "active", P, SMALL),
    OracleInterval(T0 + 5 * H, T0 + 9 * H, "shutoff", P, SMALL),
)


def run(
    name: str, at: datetime, *, deferred: bool = False, completed: bool = True, types: Any = TYPES
) -> SyncRun:
    return SyncRun(
        name, at, completed, frozenset(types), frozenset({("instance", VM)}) if deferred else frozenset()
    )


def ev(
    kind: str,
    at: datetime,
    *,
    state: str = "active",
    size: dict[str, object] | None = None,
    reason: str | None = None,
    by: str | None = None,
) -> StoredEvent:
    payload: dict[str, object] = (
        {} if kind.endswith("delete.end") or kind == "sync.delete" else {"state": state}
    )
    if size is not None:
        payload["size"] = size
    source = "collector"
    if reason is not None:
        payload["provider"] = {"reason": reason, "sync_run_id": by}
        source = "reconciliation"
    event_id = f"{kind}@{at.isoformat()}"
    return StoredEvent(
        Event(event_id, at, kind, "openstack", "os-sim", "instance", VM, P, source, payload), at
    )


CREATE = ev("compute.instance.create.end", T0 + H, size=SMALL)
POWER_OFF = ev("compute.instance.power_off.end", T0 + 5 * H, state="shutoff")
DELETE = ev("compute.instance.delete.end", T0 + 9 * H)


def judge(
    *events: StoredEvent, runs: tuple[SyncRun, ...] = (), settle: timedelta = NO_SETTLE, **kw: Any
) -> Comparison:
    return compare(ORACLE, stored_record(events, cloud="os-sim", runs=runs), settle=settle, **kw)


def only(result: Comparison) -> tuple[bool, str, str | None, str | None]:
    [diff] = result.resources
    [d] = diff.differences
    return d.tolerated, d.cause, d.judgement.correction_id, d.judgement.run_id


def test_exact_data_passes_and_counts_resource_seconds() -> None:
    result = judge(CREATE, POWER_OFF, DELETE)
    assert result.passed and result.exact == 1 and result.off == 0 and result.seconds_off == 0
    assert result.oracle_seconds == {"instance": 8 * 3600}


def test_number_forms_do_not_matter() -> None:
    same = {"vcpus": 1, "ram_gb": 2.0, "disk_gb": 20, "flavor": "m1.small"}
    assert judge(
        replace(CREATE, event=replace(CREATE.event, payload={"state": "active", "size": same})),
        POWER_OFF,
        DELETE,
    ).passed


def test_a_poll_dated_update_of_the_first_run_that_could_book_it_is_tolerated() -> None:
    at = T0 + 5 * H + 30 * M
    fix = ev("sync.update", at, state="shutoff", size=SMALL, reason="drift", by="r1")
    result = judge(CREATE, fix, DELETE, runs=(run("r0", T0 + 2 * H), run("r1", at), run("r2", at + H)))
    assert result.passed and result.tolerated == 1
    assert only(result) == (True, POLL_DATED_UPDATE, fix.event.event_id, "r1")
    doc = result.to_doc()["resources"][0]["differences"][0]
    assert (doc["verdict"], doc["correction_event_id"], doc["sync_run_id"]) == (
        "tolerated",
        fix.event.event_id,
        "r1",
    )


def test_a_restore_a_later_run_dated_at_the_first_run_that_could_is_tolerated() -> None:
    # A late event landed behind r1, which had listed shutoff: r2 restores it at r1's instant.
    at = T0 + 5 * H + 30 * M
    runs = (run("r0", T0 + 2 * H), run("r1", at), run("r2", at + H))
    fix = ev("sync.update", at, state="shutoff", size=SMALL, reason="drift", by="r2")
    assert only(judge(CREATE, fix, DELETE, runs=runs)) == (True, POLL_DATED_UPDATE, fix.event.event_id, "r2")
    # Dated at a run that could not book it (r0 began before the change): off.
    early = ev("sync.update", T0 + 2 * H, state="shutoff", size=SMALL, reason="drift", by="r2")
    assert not judge(CREATE, early, DELETE, runs=runs).passed


def test_a_poll_dated_update_one_run_later_than_the_first_that_could_is_off() -> None:
    late = T0 + 6 * H + 30 * M
    fix = ev("sync.update", late, state="shutoff", size=SMALL, reason="drift", by="r2")
    result = judge(CREATE, fix, DELETE, runs=(run("r1", T0 + 5 * H + 30 * M), run("r2", late)))
    assert not result.passed
    assert only(result)[:2] == (False, LATER_RUN)
    assert result.resources[0].differences[0].judgement.due_run_id == "r1"


def test_the_settle_window_defers_the_first_run_that_could_book_an_update() -> None:
    runs = (run("r1", T0 + 5 * H + M), run("r2", T0 + 6 * H))
    fix = ev("sync.update", T0 + 6 * H, state="shutoff", size=SMALL, reason="drift", by="r2")
    assert judge(CREATE, fix, DELETE, runs=runs, settle=timedelta(seconds=120)).passed
    assert not judge(CREATE, fix, DELETE, runs=runs, settle=NO_SETTLE).passed


def test_a_run_that_deferred_the_resource_does_not_count_and_cannot_book_it() -> None:
    runs = (run("r1", T0 + 5 * H + M, deferred=True), run("r2", T0 + 6 * H))
    by_r2 = ev("sync.update", T0 + 6 * H, state="shutoff", size=SMALL, reason="drift", by="r2")
    assert judge(CREATE, by_r2, DELETE, runs=runs).passed
    by_r1 = ev("sync.update", T0 + 5 * H + M, state="shutoff", size=SMALL, reason="drift", by="r1")
    assert only(judge(CREATE, by_r1, DELETE, runs=runs))[:2] == (False, DEFERRING_RUN)


def test_a_failed_or_incomplete_run_does_not_count() -> None:
    fix = ev("sync.update", T0 + 7 * H, state="shutoff", size=SMALL, reason="drift", by="r3")
    runs = (
        run("r1", T0 + 5 * H + M, completed=False),
        run("r2", T0 + 6 * H, types={"volume"}),
        run("r3", T0 + 7 * H),
    )
    assert judge(CREATE, fix, DELETE, runs=runs).passed


def test_a_failed_run_that_listed_the_type_may_book_ahead_of_the_first_completed_run() -> None:
    """A run whose volume listing failed keeps its instance corrections (docs/reconciliation.md,
    "Failures"): booked at its own instant, ahead of the next completed run, tolerated; a failed run
    that did not list the type to the end stays off."""
    by_r1 = ev("sync.update", T0 + 5 * H + M, state="shutoff", size=SMALL, reason="drift", by="r1")
    listed = (run("r1", T0 + 5 * H + M, completed=False), run("r2", T0 + 6 * H))
    assert only(judge(CREATE, by_r1, DELETE, runs=listed)) == (
        True,
        BY_A_FAILED_RUN,
        by_r1.event.event_id,
        "r1",
    )
    unlisted = (run("r1", T0 + 5 * H + M, completed=False, types={"volume"}), run("r2", T0 + 6 * H))
    assert only(judge(CREATE, by_r1, DELETE, runs=unlisted))[:2] == (False, LATER_RUN)
    gone = ev("sync.delete", T0 + 9 * H + 10 * M, reason="absent from a complete listing", by="r1")
    failed = (run("r1", T0 + 9 * H + 10 * M, completed=False), run("r2", T0 + 10 * H))
    assert only(judge(CREATE, POWER_OFF, gone, runs=failed))[:2] == (True, BY_A_FAILED_RUN)


def test_a_correction_not_dated_at_its_runs_instant_is_off() -> None:
    fix = ev("sync.update", T0 + 5 * H + 20 * M, state="shutoff", size=SMALL, reason="drift", by="r1")
    result = judge(CREATE, fix, DELETE, runs=(run("r1", T0 + 5 * H + 30 * M),))
    assert only(result)[:2] == (False, NOT_AT_RUN_INSTANT)


def test_a_delete_by_absence_of_the_first_run_after_the_deletion_is_tolerated() -> None:
    at = T0 + 9 * H + 10 * M
    gone = ev("sync.delete", at, reason="absent from a complete listing", by="r1")
    runs = (run("r0", T0 + 8 * H), run("r1", at), run("r2", at + H))
    assert only(judge(CREATE, POWER_OFF, gone, runs=runs)) == (
        True,
        DELETE_BY_ABSENCE,
        gone.event.event_id,
        "r1",
    )
    deferred = (run("r0", T0 + 8 * H), run("r1", at, deferred=True), run("r2", at + H))
    assert only(judge(CREATE, POWER_OFF, gone, runs=deferred))[:2] == (False, DEFERRING_RUN)
    later = ev("sync.delete", at + H, reason="absent from a complete listing", by="r2")
    assert only(judge(CREATE, POWER_OFF, later, runs=runs))[:2] == (False, LATER_RUN)
    # Booked by a later run and dated by proof at the first run that could: tolerated, naming both.
    proved = ev("sync.delete", at, reason="absent from a complete listing", by="r2")
    assert only(judge(CREATE, POWER_OFF, proved, runs=runs)) == (
        True,
        DELETE_BY_ABSENCE,
        proved.event.event_id,
        "r2",
    )
    # Dated at a run that deferred it, or before the first that could: off.
    assert not judge(CREATE, POWER_OFF, proved, runs=deferred).passed
    early = ev("sync.delete", T0 + 8 * H, reason="absent from a complete listing", by="r2")
    assert not judge(CREATE, POWER_OFF, early, runs=runs).passed


def test_a_reported_delete_not_at_terminated_at_is_off() -> None:
    at = T0 + 9 * H + timedelta(seconds=1)
    late = ev("sync.delete", at, reason="reported delete", by="r1")
    assert only(judge(CREATE, POWER_OFF, late, runs=(run("r1", T0 + 10 * H),)))[:2] == (
        False,
        REPORTED_DELETE_OFF,
    )
    exact = ev("sync.delete", T0 + 9 * H, reason="reported delete", by="r1")
    assert judge(CREATE, POWER_OFF, exact, runs=(run("r1", T0 + 10 * H),)).exact == 1


def test_a_collector_delete_moved_later_is_off() -> None:
    moved = ev("compute.instance.delete.end", T0 + 9 * H + timedelta(seconds=1))
    assert only(judge(CREATE, POWER_OFF, moved, runs=(run("r1", T0 + 10 * H),)))[:2] == (False, DELETE_LATE)


def test_a_create_moved_either_way_is_off() -> None:
    for offset, cause in ((-30, CREATE_EARLY), (30, CREATE_LATE)):
        moved = ev("compute.instance.create.end", T0 + H + timedelta(seconds=offset), size=SMALL)
        assert only(judge(moved, POWER_OFF, DELETE))[:2] == (False, cause)


def test_a_create_correction_is_tolerated_at_the_platforms_creation_instant_only() -> None:
    created = T0 + H - 40 * timedelta(seconds=1)
    fix = ev("sync.create", created, size=SMALL, reason="missed create", by="r1")
    platform = {("instance", VM): created}
    result = judge(fix, CREATE, POWER_OFF, DELETE, platform_created=platform)
    assert only(result) == (True, CREATE_AT_PLATFORM_INSTANT, fix.event.event_id, "r1")
    assert only(judge(fix, CREATE, POWER_OFF, DELETE))[:2] == (False, CREATE_EARLY)
    early = ev("sync.create", created - 30 * M, size=SMALL, reason="missed create", by="r1")
    assert only(judge(early, CREATE, POWER_OFF, DELETE, platform_created=platform))[:2] == (
        False,
        CREATE_EARLY,
    )


def test_a_lost_update_undone_before_any_run_could_see_it_is_tolerated() -> None:
    oracle = vm_oracle(
        OracleInterval(T0 + H, T0 + 5 * H, "active", P, SMALL),
        OracleInterval(T0 + 5 * H, T0 + 5 * H + 20 * M, "shutoff", P, SMALL),
        OracleInterval(T0 + 5 * H + 20 * M, T0 + 9 * H, "active", P, SMALL),
    )
    power_on = ev("compute.instance.power_on.end", T0 + 5 * H + 20 * M)
    record = stored_record([CREATE, power_on, DELETE], cloud="os-sim", runs=(run("r1", T0 + 6 * H),))
    result = compare(oracle, record, settle=NO_SETTLE)
    assert only(result)[:2] == (True, NO_RUN_COULD_BOOK)
    seen = stored_record([CREATE, power_on, DELETE], cloud="os-sim", runs=(run("r1", T0 + 5 * H + 10 * M),))
    assert only(compare(oracle, seen, settle=NO_SETTLE))[:2] == (False, NOT_CORRECTED)


def test_a_wrong_flavor_shows_in_the_quantity_error_where_resource_seconds_do_not() -> None:
    wrong = ev("compute.instance.create.end", T0 + H, size=MEDIUM)
    right = ev("compute.instance.resize.confirm.end", T0 + 3 * H, size=SMALL)
    result = judge(wrong, right, POWER_OFF, DELETE)
    assert not result.passed and result.seconds_off == 0
    assert only(result)[:2] == (False, "wrong size")
    lines = {(m, u): line for (_, m, u), line in result.quantities.items()}
    assert lines[("m1.medium", "vcpu_h")].signed == 4 and lines[("m1.medium", "vcpu_h")].absolute == 4
    assert lines[("m1.small", "vcpu_h")].signed == -2 and lines[("m1.small", "vcpu_h")].absolute == 2
    assert lines[("m1.small", "vcpu_h")].oracle == 8
    doc = {(q["member"], q["unit"]): q for q in result.to_doc()["quantities"]}
    assert doc[("m1.medium", "ram_gb_h")] == {
        "resource_type": "instance",
        "member": "m1.medium",
        "unit": "ram_gb_h",
        "oracle": 0,
        "stored": 8,
        "signed": 8,
        "absolute": 8,
    }


def test_a_stored_resource_the_oracle_lacks_is_off() -> None:
    other = StoredEvent(
        Event(
            "v",
            T0,
            "volume.create.end",
            "openstack",
            "os-sim",
            "volume",
            "v",
            P,
            payload={"state": "available", "size": {"size_gb": 1, "type": "ssd"}},
        ),
        T0,
    )
    result = judge(CREATE, POWER_OFF, DELETE, other)
    assert not result.passed and result.off_by_cause == {NOT_IN_ORACLE: 1}
    assert result.stored_seconds["volume"] == (T1 - T0).total_seconds()
    assert result.quantities[("volume", "ssd", "gb_h")].absolute == (T1 - T0).total_seconds() / 3600


@settings(max_examples=30, deadline=None)
@given(st.permutations(range(3)), st.lists(st.integers(0, 2), max_size=3))
def test_arrival_order_and_duplicates_do_not_change_the_verdict(order: list[int], dups: list[int]) -> None:
    events = [CREATE, POWER_OFF, DELETE]
    arrived = [events[i] for i in order] + [replace(events[i]) for i in dups]
    result = judge(*arrived)
    assert result.passed and result.exact == 1


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2), st.integers(-7200, 7200).filter(lambda s: s != 0))
def test_any_collector_event_moved_by_a_second_or_more_is_off(which: int, seconds: int) -> None:
    events = [CREATE, POWER_OFF, DELETE]
    moved = events[which]
    events[which] = replace(
        moved, event=replace(moved.event, timestamp=moved.event.timestamp + timedelta(seconds=seconds))
    )
    runs = tuple(run(f"r{n}", T0 + n * H) for n in range(1, 12))
    assert not judge(*events, runs=runs).passed


def test_a_correction_the_rows_newest_event_forced_past_its_runs_instant_is_tolerated() -> None:
    forced = T0 + 6 * H + timedelta(microseconds=1)
    fix = ev("sync.update", forced, state="shutoff", size=SMALL, reason="drift", by="r1")
    provider = {
        **fix.event.payload["provider"],
        "dated_past_newest_event": {"requested": "2026-07-01T06:00:00Z"},
    }
    fix = replace(fix, event=replace(fix.event, payload={**fix.event.payload, "provider": provider}))
    assert only(judge(CREATE, fix, DELETE, runs=(run("r1", T0 + 6 * H),)))[:2] == (True, POLL_DATED_UPDATE)


def test_two_unbooked_changes_before_one_run_are_tolerated_until_its_update() -> None:
    # Neither change booked by a notification (a volume offered for transfer, then accepted with the
    # accept lost): the store stays on the facts before both until the first run that could book it.
    two = vm_oracle(
        OracleInterval(T0 + H, T0 + 5 * H, "active", P, SMALL),
        OracleInterval(T0 + 5 * H, T0 + 5 * H + 20 * M, "paused", P, SMALL),
        OracleInterval(T0 + 5 * H + 20 * M, T0 + 9 * H, "shutoff", P, SMALL),
    )
    runs = (run("r0", T0 + 2 * H), run("r1", T0 + 6 * H), run("r2", T0 + 7 * H))
    fix = ev("sync.update", T0 + 6 * H, state="shutoff", size=SMALL, reason="drift", by="r1")
    result = compare(two, stored_record((CREATE, fix, DELETE), cloud="os-sim", runs=runs), settle=NO_SETTLE)
    assert result.passed and result.tolerated == 1
    assert [d.fields for d in result.resources[0].differences] == [("state",), ("state",)]
    late = ev("sync.update", T0 + 7 * H, state="shutoff", size=SMALL, reason="drift", by="r2")
    result = compare(two, stored_record((CREATE, late, DELETE), cloud="os-sim", runs=runs), settle=NO_SETTLE)
    assert not result.passed and result.resources[0].differences[-1].cause == LATER_RUN


RESIZED = vm_oracle(
    OracleInterval(T0 + H, T0 + 2 * H, "active", P, SMALL),
    OracleInterval(T0 + 2 * H, T0 + 9 * H, "active", P, MEDIUM),
    faults=("lost-update",),
)


def test_a_lost_update_a_later_notification_caught_up_with_before_any_run_is_tolerated() -> None:
    # finish_resize lost; resize.confirm (15 minutes later) carries the new flavor before any run began.
    confirm = ev("compute.instance.resize.confirm.end", T0 + 2 * H + 15 * M, size=MEDIUM)
    delete = ev("compute.instance.delete.end", T0 + 9 * H)
    record = stored_record([CREATE, confirm, delete], cloud="os-sim", runs=(run("r1", T0 + 3 * H),))
    assert only(compare(RESIZED, record, settle=NO_SETTLE))[:2] == (True, CAUGHT_UP_BEFORE_ANY_RUN)
    # A run that could have booked it came first: off.
    seen = stored_record([CREATE, confirm, delete], cloud="os-sim", runs=(run("r1", T0 + 2 * H + 5 * M),))
    assert only(compare(RESIZED, seen, settle=NO_SETTLE))[:2] == (False, NOT_CORRECTED)
    # No update was lost: the same store is a collector event dated late, and off.
    honest = vm_oracle(*RESIZED.resources[0].intervals)
    assert only(compare(honest, record, settle=NO_SETTLE))[:2] == (False, "wrong size")


def test_a_create_correction_carries_what_the_platform_listed_to_its_run() -> None:
    # The create.end came late; the run at 3 h found the volume already resized and booked what it listed.
    created = T0 + H - 40 * timedelta(seconds=1)
    fix = ev("sync.create", created, size=MEDIUM, reason="missed create", by="r1")
    late_create = ev("compute.instance.create.end", T0 + H, size=SMALL)
    confirm = ev("compute.instance.resize.confirm.end", T0 + 2 * H, size=MEDIUM)
    delete = ev("compute.instance.delete.end", T0 + 9 * H)
    platform = {("instance", VM): created}
    events = [fix, late_create, confirm, delete]
    record = stored_record(events, cloud="os-sim", runs=(run("r1", T0 + 3 * H),))
    result = compare(RESIZED, record, settle=NO_SETTLE, platform_created=platform)
    assert only(result) == (True, CREATE_AT_PLATFORM_INSTANT, fix.event.event_id, "r1")
    # Facts the platform never listed to that run: off.
    wrong = ev("sync.create", created, size={**SMALL, "flavor": "m1.tiny"}, reason="missed create", by="r1")
    record = stored_record(
        [wrong, late_create, confirm, delete], cloud="os-sim", runs=(run("r1", T0 + 3 * H),)
    )
    assert only(compare(RESIZED, record, settle=NO_SETTLE, platform_created=platform))[:2] == (
        False,
        CREATE_EARLY,
    )
