"""``fail_stale_sync_runs``: the rows a stopped holder left ``running``, failed with the reason."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tally.store import Store

pytestmark = pytest.mark.anyio

FOUND = datetime(2026, 3, 2, 8, 30, tzinfo=UTC)


async def test_running_rows_of_the_cloud_fail_with_the_reason_and_no_end(store: Store) -> None:
    done = await store.start_sync_run("os-dev", datetime(2026, 3, 1, tzinfo=UTC))
    await store.finish_sync_run(done, "completed", {"created": 1})
    older = await store.start_sync_run("os-dev", datetime(2026, 3, 1, 1, tzinfo=UTC))
    newer = await store.start_sync_run("os-dev", datetime(2026, 3, 1, 2, tzinfo=UTC))
    other_cloud = await store.start_sync_run("os-other")

    assert await store.fail_stale_sync_runs("os-dev", FOUND) == [older, newer]

    for run_id in (older, newer):
        row = await store.get_sync_run(run_id)
        assert row is not None
        assert (row["status"], row["completed_at"]) == ("failed", None)
        assert row["stats"] == {
            "errors": [
                f"sync run {run_id} never ended: the replica that ran it stopped "
                "(its lock was released without an end; found at 2026-03-02T08:30:00Z)"
            ],
            "error_count": 1,
        }
    finished = await store.get_sync_run(done)
    assert finished is not None and finished["status"] == "completed" and finished["stats"] == {"created": 1}
    untouched = await store.get_sync_run(other_cloud)
    assert untouched is not None and untouched["status"] == "running"
    assert await store.last_completed_sync_started_at("os-dev") == datetime(2026, 3, 1, tzinfo=UTC)


async def test_a_second_pass_finds_nothing(store: Store) -> None:
    await store.start_sync_run("os-dev")
    assert len(await store.fail_stale_sync_runs("os-dev")) == 1
    assert await store.fail_stale_sync_runs("os-dev") == []
