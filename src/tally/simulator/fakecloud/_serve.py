"""Hosting the fake cloud with Hypercorn inside the caller's task group, on a socket we bind.

Binding the socket here (rather than letting Hypercorn bind) is what lets the caller learn the
port of a ``port=0`` bind: it is reported through ``task_status.started(port)``.
"""

from __future__ import annotations

import contextlib
import socket

import anyio
from anyio.abc import TaskStatus
from hypercorn.asyncio import serve
from hypercorn.config import Config
from quart import Quart


async def serve_fake_cloud(
    app: Quart,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` on ``host:port`` until cancelled; reports the bound port. asyncio backend only."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(512)
    sock.setblocking(False)
    config = Config()
    config.bind = [f"fd://{sock.fileno()}"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 0.5
    config.keep_alive_timeout = 30
    shutdown = anyio.Event()

    async def run() -> None:
        # Shielded so that a cancelled caller still gets Hypercorn's own orderly shutdown, which the
        # event below starts; cancelling Hypercorn's asyncio task group directly leaves it half-closed.
        with anyio.CancelScope(shield=True):
            await serve(app, config, shutdown_trigger=shutdown.wait)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            # Connections wait in the backlog of the bound socket until Hypercorn takes them.
            task_status.started(sock.getsockname()[1])
            try:
                await anyio.sleep_forever()
            finally:
                shutdown.set()
    finally:
        # Hypercorn adopts the descriptor and closes it itself; this covers a failure before it did.
        with contextlib.suppress(OSError):
            sock.close()
