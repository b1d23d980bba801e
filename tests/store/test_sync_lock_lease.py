"""The PostgreSQL sync lock is a lease: a holder that hangs loses it, one that renews keeps it.

A stopped process keeps its session open (the kernel still answers for it), so only the server's
``idle_session_timeout`` frees its lock: another holder takes the cloud within the lease, and the
stopped one, once it runs again, learns at its next renewal that it lost the lock and ends its block.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from tally.store import StoreUnavailable, SyncLockHeld, open_store
from tally.store._pg_sync_lock import hold_sync_lock

LEASE_S = 2.0
HOLDER = """
import sys, anyio
from tally.store import StoreUnavailable
from tally.store._pg_sync_lock import hold_sync_lock

async def main(url: str, lease: float) -> int:
    try:
        async with hold_sync_lock(url, "os-dev", lease_s=lease):
            print("held", flush=True)
            await anyio.sleep(60)
    except StoreUnavailable as exc:
        print(f"lost: {exc}", flush=True)
        return 3
    return 0

sys.exit(anyio.run(main, sys.argv[1], float(sys.argv[2])))
"""


@pytest.fixture
def migrated(pg_url: str) -> str:
    async def migrate() -> None:
        async with open_store(pg_url) as store:
            await store.migrate_up()

    anyio.run(migrate)
    return pg_url


async def _try_take(url: str) -> bool:
    try:
        async with hold_sync_lock(url, "os-dev", lease_s=LEASE_S):
            return True
    except SyncLockHeld:
        return False


def test_a_stopped_holder_loses_the_lock_within_the_lease(migrated: str, tmp_path: Path) -> None:
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    holder = subprocess.Popen(
        [sys.executable, str(script), migrated, str(LEASE_S)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        os.kill(holder.pid, signal.SIGSTOP)
        stopped_at = time.monotonic()
        assert anyio.run(_try_take, migrated) is False  # the stopped holder's session still holds it
        while not anyio.run(_try_take, migrated):
            assert time.monotonic() - stopped_at < LEASE_S + 5, "the lease never ran out"
            time.sleep(0.2)
        taken_after = time.monotonic() - stopped_at
        assert LEASE_S - 0.5 <= taken_after < LEASE_S + 5
        os.kill(holder.pid, signal.SIGCONT)
        # It learns at its renewal that the server ended its session, and its block is cancelled.
        out, _ = holder.communicate(timeout=LEASE_S + 10)
        assert holder.returncode == 3, out
        assert out.startswith("lost: the sync lock of os-dev was lost while the run went on"), out
    finally:
        if holder.poll() is None:
            os.kill(holder.pid, signal.SIGCONT)
            holder.kill()
            holder.wait()


def test_a_holder_that_renews_keeps_the_lock_past_its_lease(migrated: str) -> None:
    async def hold_long() -> None:
        async with hold_sync_lock(migrated, "os-dev", lease_s=1.5):
            for _ in range(4):
                await anyio.sleep(1.0)
                assert not await _try_take(migrated)
        assert await _try_take(migrated)  # released at the block's end

    anyio.run(hold_long)


def test_a_holder_whose_step_holds_the_cpu_past_the_lease_keeps_the_lock(migrated: str) -> None:
    # The renewal must not wait for the run's loop: a diff of a million resources holds it for longer
    # than a lease, and the server would end the idle session, and the lock with it, meanwhile.
    async def hold_the_cpu() -> None:
        async with hold_sync_lock(migrated, "os-dev", lease_s=1.5):
            until = time.monotonic() + 4.0
            while time.monotonic() < until:  # no checkpoint: the loop gets no turn
                pass
            assert not await _try_take(migrated)
            await anyio.sleep(1.0)  # a turn for whatever renews on the loop, and a renewal more
            assert not await _try_take(migrated)
        assert await _try_take(migrated)  # released at the block's end

    anyio.run(hold_the_cpu)


def test_a_lock_lost_under_a_running_block_ends_it_with_store_unavailable(migrated: str) -> None:
    import psycopg

    async def lose_it() -> None:
        with pytest.raises(StoreUnavailable, match="sync lock of os-dev was lost"):
            async with hold_sync_lock(migrated, "os-dev", lease_s=1.5):
                async with await psycopg.AsyncConnection.connect(migrated, autocommit=True) as admin:
                    await admin.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE application_name = 'tally sync lock os-dev'"
                    )
                with anyio.fail_after(5):
                    await anyio.sleep(60)  # cancelled at the next renewal, half a second on
        assert await _try_take(migrated)

    anyio.run(lose_it)
