"""HeldResource: open before the children after it start, closed after they stopped."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from tally.actors import ActorContext, ChildSpec, HeldResource, Supervisor

pytestmark = pytest.mark.anyio


async def test_resource_is_open_for_exactly_the_lifetime_of_its_users() -> None:
    events: list[str] = []

    @asynccontextmanager
    async def open_pool() -> AsyncIterator[str]:
        events.append("open")
        yield "pool"
        events.append("close")

    pool = HeldResource("pool", open_pool)

    async def user(ctx: ActorContext) -> None:
        events.append(f"user sees {pool.value}")
        ctx.started()
        await ctx.wait_stopping()
        events.append(f"user stopping, still sees {pool.value}")

    sup = Supervisor([pool.child(), ChildSpec("user", user)])
    async with anyio.create_task_group() as tg:
        await tg.start(sup.run)
        sup.stop()
    assert events == ["open", "user sees pool", "user stopping, still sees pool", "close"]
    with pytest.raises(RuntimeError, match="resource 'pool' is not open"):
        _ = pool.value
