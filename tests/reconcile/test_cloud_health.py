"""Each cloud's health: restored from its sync_runs rows, kept from outcomes, shown without error texts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tally.reconcile._cloud_health import HealthBoard, restored
from tally.reconcile.internals import CloudHealth

T = datetime(2026, 7, 1, 12, tzinfo=UTC)


def row(run_id: str, status: str, minutes: int | None, **stats: object) -> dict[str, object]:
    finished = T + timedelta(minutes=minutes) if minutes is not None else None
    return {"id": run_id, "status": status, "completed_at": finished, "stats": stats}


def test_restored_keeps_the_newest_completed_and_the_newest_failed_run() -> None:
    health = restored(
        [
            row("r1", "completed", 0),
            row("r2", "failed", 10, errors=["listing servers: 503"], error_count=1),
            row("r3", "completed", 20),
            row("r4", "failed", 30, errors=["a", "b", "c"], error_count=3),
            row("r5", "running", None),
        ]
    )
    assert health.last_completed_at == T + timedelta(minutes=20) and health.last_completed_run == "r3"
    assert health.last_error_at == T + timedelta(minutes=30) and health.last_error_run == "r4"
    assert health.last_error is not None and "3 error(s)" in health.last_error
    assert health.failing


def test_an_error_answered_by_a_later_completed_run_is_not_failing() -> None:
    health = restored([row("r1", "failed", 0, errors=["x"], error_count=1), row("r2", "completed", 5)])
    assert not health.failing
    assert health.to_json()["last_error_run"] == "r1"


def test_the_json_carries_no_error_text_of_a_run() -> None:
    platform_detail = "listing servers of os-a: 401 from https://nova.internal:8774 for user billing"
    health = restored([row("r1", "failed", 0, errors=[platform_detail], error_count=1)])
    document = health.to_json()
    assert platform_detail not in str(document)
    assert document == {
        "failing": True,
        "last_completed_at": None,
        "last_completed_run": None,
        "last_error_at": "2026-07-01T12:00:00Z",
        "last_error_run": "r1",
        "last_error": "the run failed with 1 error(s); their text is in the run's sync_runs row",
    }


def test_a_cloud_with_no_run_is_neither_failing_nor_completed() -> None:
    assert CloudHealth().to_json()["failing"] is False
    assert restored([]) == CloudHealth()


def test_the_board_holds_every_configured_cloud_and_follows_outcomes() -> None:
    board = HealthBoard(["os-b", "os-a"])
    board.failed("os-a", None, T, "waited the whole budget of 45 s for a sync slot")
    assert list(board.snapshot()) == ["os-a", "os-b"]
    assert board.snapshot()["os-a"].failing
    board.completed("os-a", "r9", T + timedelta(seconds=1))
    a = board.snapshot()["os-a"]
    assert not a.failing and a.last_completed_run == "r9" and a.last_error is not None
