"""A hung holder of a cloud's PostgreSQL sync lock does not hold it for ever: the lock is a lease.

The holder is a process of the test's own, taking the lock through the store with a 3 s lease (the
module's ``LEASE_S``, 60 s in production) and then sleeping in its run. Alive, it keeps the lock past
its lease (the heartbeat). SIGSTOPped, it stops speaking on the lock's session, the server ends the
session once idle for the lease, and the test takes the lock within the lease and a second.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import anyio
import pytest

from tally.store import SyncLockHeld, open_store

pytestmark = pytest.mark.postgres

LEASE_S = 3.0

HOLDER = """
import sys, anyio
from tally.store import _pg_sync_lock, open_store

_pg_sync_lock.LEASE_S, _pg_sync_lock.HEARTBEAT_S = {lease}, {heartbeat}

async def main() -> None:
    async with open_store(sys.argv[1], max_conns=1) as store:
        async with store.sync_lock(sys.argv[2]):
            print("held", flush=True)
            await anyio.sleep(3600)

anyio.run(main)
"""


async def _held(url: str, cloud: str) -> bool:
    async with open_store(url, max_conns=1) as store:
        try:
            async with store.sync_lock(cloud):
                return False
        except SyncLockHeld:
            return True


def held(url: str, cloud: str) -> bool:
    return anyio.run(_held, url, cloud)


async def _migrate(url: str) -> None:
    async with open_store(url, max_conns=1) as store:
        await store.migrate_up()


def test_a_stopped_holder_loses_the_lock_within_its_lease(pg_url: str) -> None:
    anyio.run(_migrate, pg_url)
    cloud = f"os-{uuid.uuid4().hex[:8]}"
    code = HOLDER.format(lease=LEASE_S, heartbeat=LEASE_S / 3)
    holder = subprocess.Popen(
        [sys.executable, "-c", code, pg_url, cloud],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        # Alive, it keeps the lock well past the lease: its heartbeat keeps the session busy enough.
        time.sleep(LEASE_S * 2)
        assert held(pg_url, cloud)

        holder.send_signal(signal.SIGSTOP)
        stopped = time.monotonic()
        while held(pg_url, cloud):
            assert time.monotonic() - stopped < LEASE_S + 5, "the stopped holder kept the lock"
            time.sleep(0.2)
        took = time.monotonic() - stopped
        print(f"the lock was free {took:.1f} s after its holder stopped (lease {LEASE_S:g} s)")
        assert took < LEASE_S + 2

        holder.send_signal(signal.SIGCONT)
        time.sleep(LEASE_S / 3 + 1)  # its next heartbeat meets the ended session
    finally:
        holder.send_signal(signal.SIGCONT)
        holder.terminate()
        _, errors = holder.communicate(timeout=10)
    assert "sync lock lost with its connection before the run ended cloud=" + cloud in errors, errors
