"""D9: a request cancelled by asyncio itself (Quart cancels a handler whose client went away) while
its BEGIN waits in aiosqlite's thread must not leave a transaction open for the next caller.

anyio's shielded scopes do not stop a native ``Task.cancel()``; the BEGIN runs in the thread
anyway, so before the fix the next transaction failed with "cannot start a transaction within a
transaction". A second connection holding the write lock keeps the BEGIN waiting in the thread,
which makes the interleaving certain.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from tally.store import open_store

pytestmark = pytest.mark.anyio


def _hold_write_lock(path: Path) -> sqlite3.Connection:
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    return other


async def test_a_natively_cancelled_begin_leaves_no_transaction_open(tmp_path: Path) -> None:
    path = tmp_path / "tally.sqlite3"
    async with open_store(f"sqlite:///{path}") as store:
        await store.migrate_up()
        other = _hold_write_lock(path)
        victim = asyncio.ensure_future(store.list_resource_types())
        await asyncio.sleep(0.3)  # the BEGIN IMMEDIATE now waits for the other connection's lock
        victim.cancel()
        await asyncio.sleep(0.1)  # the cancellation reached the task while its BEGIN still waits
        other.execute("ROLLBACK")
        other.close()
        with pytest.raises(asyncio.CancelledError):
            await victim
        # The next callers find the connection as a transaction leaves it: closed.
        assert {t.resource_type for t in await store.list_resource_types()} >= {"instance"}
        await store.create_api_token(token_hash="h" * 64, role="admin")
        assert await store.api_token_by_hash("h" * 64) is not None
