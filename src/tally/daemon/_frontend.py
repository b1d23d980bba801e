"""The HTTP front end actor: serves one Quart app until told to stop.

It is started last and so stopped first: on shutdown it stops taking requests before the actors that
answer them go away. Requests in flight get the graceful timeout to finish.
"""

from __future__ import annotations

import anyio
from quart import Quart

from tally.actors import ActorContext, ChildSpec
from tally.http import serve_quart


def http_front_end(app: Quart, host: str, port: int, *, graceful_timeout_s: float) -> ChildSpec:
    """A supervisor child named ``http`` serving ``app`` on ``host:port``."""

    async def run(ctx: ActorContext) -> None:
        async with anyio.create_task_group() as tg:
            await tg.start(_serve, app, host, port, graceful_timeout_s)
            ctx.started()
            await ctx.wait_stopping()
            tg.cancel_scope.cancel()

    return ChildSpec("http", run)


async def _serve(
    app: Quart, host: str, port: int, graceful_timeout_s: float, *, task_status: anyio.abc.TaskStatus[int]
) -> None:
    await serve_quart(app, host, port, graceful_timeout_s=graceful_timeout_s, task_status=task_status)
