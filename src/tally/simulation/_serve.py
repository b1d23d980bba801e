"""Hosting the fake cloud inside the caller's task group: the daemon's own Hypercorn serving.

The fake cloud is served exactly as the Reporting API is, on a socket bound before ``started`` so a
``port=0`` caller learns its port; its graceful window is short because a sync in flight against a
simulated cloud that is going away has nothing left to finish.
"""

from __future__ import annotations

import anyio
from anyio.abc import TaskStatus
from quart import Quart

from tally.http import serve_quart


async def serve_fake_cloud(
    app: Quart,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` on ``host:port`` until cancelled; reports the bound port. asyncio backend only."""
    await serve_quart(app, host, port, graceful_timeout_s=0.5, task_status=task_status)
