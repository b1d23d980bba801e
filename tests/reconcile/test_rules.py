"""Each rule of seed 000 "What a run defers" / "The instants a missed delete is booked at", by name."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tally.core import ONE_MICROSECOND, ResourceKey, ResourceRow
from tally.reconcile import DeletedResource, ObservedResource
from tally.reconcile.rules import (
    Deferral,
    cap_errors,
    create_instant,
    create_missing_from_history,
    deferral_of_absence_delete,
    deferral_of_create,
    deferral_of_reported_delete,
    deferral_of_update,
    deferral_of_whole_life,
    delete_is_skipped,
    deleted_servers_window,
    drift,
    inside_recent_window,
    past_newest_event,
    poll_instant,
    reported_delete_instant,
    reported_within_run,
    whole_life_start,
)

POLL = datetime(2026, 7, 10, 12, 0, tzinfo=UTC)


def s(seconds: float) -> datetime:
    """The instant ``seconds`` relative to the poll."""
    return POLL + timedelta(seconds=seconds)


def row(
    last_event_at: datetime = s(-3600), *, state: str = "active", deleted: bool = False, **kw: Any
) -> ResourceRow:
    return ResourceRow(
        key=ResourceKey("c", kw.get("resource_type", "instance"), kw.get("resource_id", "r1")),
        platform="openstack",
        project_id=kw.get("project_id", "p1"),
        state="deleted" if deleted else state,
        size=kw.get("size", {"vcpus": 1}),
        created_at=kw.get("created_at", s(-7200)),
        deleted_at=last_event_at if deleted else None,
        last_event_type="x.delete" if deleted else "x.create",
        last_event_at=last_event_at,
        last_payload={},
        first_event_at=kw.get("first_event_at", s(-7200)),
    )


def observed(
    *, changed: datetime | None = s(-3600), transitional: bool = False, **kw: Any
) -> ObservedResource:
    return ObservedResource(
        "instance",
        kw.get("resource_id", "r1"),
        kw.get("project_id", "p1"),
        kw.get("state", "active"),
        kw.get("size", {"vcpus": 1}),
        kw.get("created", s(-7200)),
        changed,
        transitional,
    )


def test_inside_recent_window() -> None:
    assert inside_recent_window(s(-30), POLL, 60)
    assert inside_recent_window(s(-60), POLL, 60)  # the window's edge is inside
    assert not inside_recent_window(s(-61), POLL, 60)
    assert inside_recent_window(s(3600), POLL, 60)  # after the run's instant counts as inside
    assert not inside_recent_window(None, POLL, 60)  # no instant is never recent
    assert not inside_recent_window(s(-1), POLL, 0)  # 0 turns the window off
    assert not inside_recent_window(s(10), POLL, 0)


def test_deferral_of_create() -> None:
    assert deferral_of_create(observed(transitional=True), None, POLL, 60) is Deferral.TRANSITIONAL
    # both reasons: counted once, as transitional
    assert (
        deferral_of_create(observed(transitional=True, changed=s(-5)), None, POLL, 60)
        is Deferral.TRANSITIONAL
    )
    assert deferral_of_create(observed(changed=s(-5)), None, POLL, 60) is Deferral.RECENT
    assert deferral_of_create(observed(), row(s(-5), deleted=True), POLL, 60) is Deferral.RECENT
    assert deferral_of_create(observed(), None, POLL, 60) is None
    assert deferral_of_create(observed(changed=None), None, POLL, 60) is None
    assert deferral_of_create(observed(transitional=True), None, POLL, 0) is Deferral.TRANSITIONAL


def test_deferral_of_update() -> None:
    assert deferral_of_update(observed(transitional=True), row(), POLL, 60) is Deferral.TRANSITIONAL
    assert deferral_of_update(observed(changed=s(-10)), row(), POLL, 60) is Deferral.RECENT
    assert deferral_of_update(observed(), row(s(-10)), POLL, 60) is Deferral.RECENT
    assert deferral_of_update(observed(changed=s(120)), row(), POLL, 60) is Deferral.RECENT
    assert deferral_of_update(observed(), row(), POLL, 60) is None
    assert deferral_of_update(observed(changed=s(-10)), row(s(-10)), POLL, 0) is None


def test_deferral_of_reported_delete() -> None:
    gone = DeletedResource("instance", "r1", "p1", s(-10))
    assert deferral_of_reported_delete(gone, row(), POLL, 60) is Deferral.RECENT
    old = DeletedResource("instance", "r1", "p1", s(-600))
    assert deferral_of_reported_delete(old, row(s(-5)), POLL, 60) is Deferral.RECENT
    assert deferral_of_reported_delete(old, row(), POLL, 60) is None
    assert deferral_of_reported_delete(gone, row(), POLL, 0) is None


def test_deferral_of_absence_delete() -> None:
    assert deferral_of_absence_delete(row(s(-5)), POLL, 60) is Deferral.RECENT
    assert deferral_of_absence_delete(row(s(30)), POLL, 60) is Deferral.RECENT
    assert deferral_of_absence_delete(row(s(-600)), POLL, 60) is None
    assert deferral_of_absence_delete(row(s(-5)), POLL, 0) is None


def test_drift() -> None:
    assert drift(observed(), row()) == {}
    assert drift(observed(size=None, state="shutoff"), row()) == {
        "state": {"old": "active", "new": "shutoff"}
    }
    assert drift(observed(project_id="p2"), row())["project_id"] == {"old": "p1", "new": "p2"}
    assert drift(observed(size={"vcpus": 2}), row())["size"] == {"old": {"vcpus": 1}, "new": {"vcpus": 2}}
    assert drift(observed(size={"ram_gb": 2}), row(size={"ram_gb": 2.0})) == {}
    assert "size" in drift(observed(size={"x": True}), row(size={"x": 1}))
    assert "size" in drift(observed(size={"x": 1, "y": True}), row(size={"x": 1, "y": 1}))


def test_drift_of_flat_sizes() -> None:
    """The flat-dict comparison agrees with the deep walk: equal members, a differing one, other keys,
    nested values and None."""
    flat = {"vcpus": 2, "ram_mb": 4096, "flavor": "m1.small", "gb": 1.5, "none": None}
    assert drift(observed(size=flat), row(size=dict(flat))) == {}
    assert "size" in drift(observed(size={**flat, "flavor": "m1.large"}), row(size=flat))
    assert "size" in drift(observed(size={**flat, "gb": 2.5}), row(size=flat))
    assert "size" in drift(observed(size={"vcpus": 2}), row(size={"vcpus": 2, "ram_mb": 1}))
    assert drift(observed(size={"a": [1, {"b": 2}]}), row(size={"a": [1, {"b": 2}]})) == {}
    assert "size" in drift(observed(size={"a": [1, {"b": 2}]}), row(size={"a": [1, {"b": 3}]}))
    assert "size" in drift(observed(size={"x": None}), row(size={"x": 0}))


def test_create_instant() -> None:
    assert create_instant(observed(created=s(-9000)), None, POLL) == s(-9000)
    assert create_instant(observed(created=s(-9000)), row(deleted=True), POLL) == POLL
    assert create_instant(observed(created=None), None, POLL) == POLL


def test_create_missing_from_history() -> None:
    without_create = row(created_at=None, first_event_at=s(-3600))
    assert create_missing_from_history(observed(created=s(-9000)), without_create) == s(-9000)
    # the platform's instant must lie before the oldest event, or the create would reorder the history
    assert create_missing_from_history(observed(created=s(-3600)), without_create) is None
    assert create_missing_from_history(observed(created=s(-60)), without_create) is None
    assert create_missing_from_history(observed(created=None), without_create) is None
    assert create_missing_from_history(observed(created=s(-9000)), row()) is None  # it has its create
    assert create_missing_from_history(observed(created=s(-9000)), None) is None  # no row: a plain create
    gone = row(created_at=None, first_event_at=s(-3600), deleted=True)
    assert create_missing_from_history(observed(created=s(-9000)), gone) is None


def test_whole_life_start() -> None:
    launched = DeletedResource("instance", "r", "p", s(-600), created_at=s(-1800), state="active")
    assert whole_life_start(launched, None) == s(-1800)
    assert whole_life_start(launched, row()) is None  # the row exists: its delete is a reported delete
    assert whole_life_start(launched, row(deleted=True)) is None
    never_launched = DeletedResource("instance", "r", "p", s(-600))
    assert whole_life_start(never_launched, None) is None


def test_deferral_of_whole_life() -> None:
    def life(start: float, end: float) -> DeletedResource:
        return DeletedResource("instance", "r", "p", s(end), created_at=s(start), state="active")

    assert deferral_of_whole_life(life(-1800, -600), POLL, 60) is None
    assert deferral_of_whole_life(life(-1800, -30), POLL, 60) is Deferral.RECENT  # deleted inside
    assert deferral_of_whole_life(life(-50, -30), POLL, 60) is Deferral.RECENT  # launched inside
    assert deferral_of_whole_life(life(-1800, -30), POLL, 0) is None


def test_reported_delete_instant() -> None:
    assert reported_delete_instant(DeletedResource("instance", "r", "p", s(-500))) == s(-500)


def test_poll_instant() -> None:
    assert poll_instant(POLL) == POLL


def test_past_newest_event() -> None:
    assert past_newest_event(s(-100), row(s(-50))) == s(-50) + ONE_MICROSECOND
    assert past_newest_event(s(-10), row(s(-50))) == s(-10)
    assert past_newest_event(s(-50), row(s(-50))) == s(-50)
    assert past_newest_event(s(-100), None) == s(-100)


def test_delete_is_skipped() -> None:
    assert delete_is_skipped(None)
    assert delete_is_skipped(row(deleted=True))
    assert not delete_is_skipped(row())


def test_deleted_servers_window() -> None:
    assert deleted_servers_window(None, POLL, 60).since is None  # a cloud's first run
    bound = s(-600)
    assert deleted_servers_window(bound, POLL, 60).since == s(-660)
    week_ago = POLL - timedelta(days=7)
    assert deleted_servers_window(week_ago, POLL, 60).since == POLL - timedelta(hours=24)
    widened = deleted_servers_window(s(600), POLL, 60)  # told an instant behind the bound
    assert widened.widened and widened.since == POLL - timedelta(hours=24)
    assert not deleted_servers_window(bound, POLL, 60).widened
    # Nova stores its instants to the second: the window opens at the bound's whole second, so a
    # server deleted in that second (stored at its start, before the bound) is listed.
    assert deleted_servers_window(s(-600.25), POLL, 0).since == s(-601)
    assert deleted_servers_window(s(-600.25), POLL, 60).since == s(-661)


def test_reported_within_run() -> None:
    assert reported_within_run(DeletedResource("instance", "r", "p", s(-1)), POLL)
    assert reported_within_run(DeletedResource("instance", "r", "p", POLL), POLL)
    assert not reported_within_run(DeletedResource("instance", "r", "p", s(1)), POLL)


def test_cap_errors() -> None:
    capped = cap_errors([f"e{i}" for i in range(150)])
    assert len(capped) == 100 and capped[0] == "e0"
    long = cap_errors(["é" * 5000])[0]
    assert len(long.encode()) <= 4096
