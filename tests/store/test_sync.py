"""What the reconciliation needs: sync runs and the per-cloud lock that holds across processes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tally.store import Store, SyncLockHeld, open_store

pytestmark = pytest.mark.anyio


async def test_sync_runs(store: Store) -> None:
    t1, t2 = datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 3, 2, tzinfo=UTC)
    assert await store.last_completed_sync_started_at("os-dev") is None
    done = await store.start_sync_run("os-dev", t1)
    await store.finish_sync_run(done, "completed", {"created": 1, "updated": 0, "deleted": 2})
    failed = await store.start_sync_run("os-dev", t2)
    await store.finish_sync_run(failed, "failed", {"errors": ["enumerating volume: down"], "error_count": 1})
    running = await store.start_sync_run("os-dev")
    assert await store.last_completed_sync_started_at("os-dev") == t1
    run = await store.get_sync_run(failed)
    assert run is not None and run["status"] == "failed" and run["started_at"] == t2
    assert run["stats"]["error_count"] == 1 and run["completed_at"] is not None
    pending = await store.get_sync_run(running)
    assert pending is not None and pending["status"] == "running" and pending["completed_at"] is None
    assert await store.get_sync_run("nope") is None
    listed = await store.list_sync_runs("os-dev")
    assert [r["id"] for r in listed[:2]] == [done, failed] and {r["id"] for r in listed} == {
        done,
        failed,
        running,
    }
    assert (
        listed[0]["stats"] == {"created": 1, "updated": 0, "deleted": 2}
        and listed[0]["status"] == "completed"
    )
    assert await store.list_sync_runs("os-other") == []


async def test_sync_lock_excludes_a_second_holder(store_url: str) -> None:
    # Two separately opened stores: separate connections (separate pools on PostgreSQL).
    async with open_store(store_url) as one, open_store(store_url) as two:
        await one.migrate_up()
        async with one.sync_lock("os-dev"):
            with pytest.raises(SyncLockHeld, match="os-dev"):
                async with two.sync_lock("os-dev"):
                    pass
            async with two.sync_lock("os-other"):
                pass
        async with two.sync_lock("os-dev"):
            pass


async def test_sqlite_lock_of_a_crashed_holder_expires(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'lock.sqlite3'}"
    async with open_store(url) as store:
        await store.migrate_up()
    import sqlite3

    from tally.store._sqlite import sqlite_stamp

    with sqlite3.connect(tmp_path / "lock.sqlite3") as db:
        now = datetime.now(UTC)
        db.execute(
            "INSERT INTO sync_locks VALUES ('alive', 'other', ?)", (sqlite_stamp(now + timedelta(minutes=1)),)
        )
        db.execute(
            "INSERT INTO sync_locks VALUES ('crashed', 'gone', ?)",
            (sqlite_stamp(now - timedelta(seconds=1)),),
        )
    async with open_store(url) as store:
        with pytest.raises(SyncLockHeld):
            async with store.sync_lock("alive"):
                pass
        async with store.sync_lock("crashed"):
            pass
