"""Replicas that start together on a fresh PostgreSQL database all open their store and migrate it."""

from __future__ import annotations

from contextlib import AsyncExitStack

import anyio
import pytest

from tally.store import SchemaStatus, Store, open_store

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


async def test_stores_opened_at_once_on_a_fresh_database_all_open_and_agree(pg_url: str) -> None:
    """``CREATE TABLE IF NOT EXISTS schema_migrations`` is not safe concurrently: without the
    migrations' lock around it, one of several opening at once failed on pg_type's unique index."""
    stores: list[Store] = []
    async with AsyncExitStack() as stack:

        async def replica() -> None:
            store = await stack.enter_async_context(open_store(pg_url, max_conns=1))
            await store.migrate_up()
            stores.append(store)

        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(replica)
        statuses = {await store.schema_status() for store in stores}
    assert len(stores) == 8
    [status] = statuses
    assert status == SchemaStatus(status.latest, status.latest)
