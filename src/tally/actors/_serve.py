"""An actor's loop over its mailbox of requests, with the stop the close rules of ``_mailbox`` ask for.

At the supervisor's stop request the mailbox is closed, so later senders hear ``ActorStopped`` while
what was queued is still taken; once the queue is empty the loop ends and whatever the actor started
in its task group is cancelled. A crash is not a stop: the mailbox stays open and what is queued waits
for the restarted actor.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ._mailbox import Mailbox
from ._request import Request
from ._supervisor import ActorContext


async def serve_requests(
    ctx: ActorContext,
    mailbox: Mailbox[Request[Any, Any]],
    take: Callable[[Request[Any, Any], TaskGroup], Awaitable[None]],
) -> None:
    """Say the actor started, then hand each request to ``take`` (with the actor's task group, for work
    that must not hold the next request up) until the mailbox is closed at the stop and drained."""
    async with anyio.create_task_group() as tg:

        async def close_at_stop() -> None:
            await ctx.wait_stopping()
            mailbox.close()

        tg.start_soon(close_at_stop)
        ctx.started()
        while True:
            try:
                request = await mailbox.receive()
            except anyio.EndOfStream:
                break
            await take(request, tg)
        tg.cancel_scope.cancel()
