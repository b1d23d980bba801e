"""Serving an ASGI app (the Quart apps) with Hypercorn inside the caller's task group (not a second process).

Why we open the listening socket ourselves: the caller learns the bound port (port 0 in tests) and
hears ``started`` only once the socket listens, so the next actor can rely on it. A caller may also
hand in a socket it opened with ``listen_socket`` (and closes itself): the daemon's probes during its
wait for the store and the real front end after it listen on one socket, so that a connection
arriving in between waits in the backlog instead of being refused.

A socket listened on by several processes (the daemon's HTTP workers, ``shared``) is accepted from
one connection at a time: each wake-up of the loop takes one connection from the queue, where asyncio
takes as many as Hypercorn's backlog setting. Every process waits on the same queue, so the next
connection goes to the first process back in its loop, which a process busy answering is not;
accepting a whole burst at once gave most of it to whichever process woke first.

Shutdown: when the surrounding scope is cancelled, the server stops accepting at once (from a
handed-in socket, which goes on listening for the next server, it first waits ``HANDOVER_SETTLE_S``
for the requests of connections it has just accepted: see ``_stop_accepting``) and in-flight
requests get ``graceful_timeout_s`` to finish (Hypercorn runs in a shielded scope for that time),
then the server is cancelled outright. Quart is built on asyncio, so this runs on the asyncio backend.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
from typing import Any, NoReturn

import anyio
from anyio.abc import TaskStatus
from hypercorn.asyncio.run import worker_serve
from hypercorn.config import Config, Sockets
from hypercorn.typing import ASGIFramework
from hypercorn.utils import wrap_app

log = logging.getLogger(__name__)


LISTEN_BACKLOG = 1024
#: How long a server leaving a handed-in socket waits, no longer accepting, before it shuts down: a
#: client on the same host sends its request well within it once connected.
HANDOVER_SETTLE_S = 0.2


def listen_socket(host: str, port: int) -> socket.socket:
    """A listening, non-blocking TCP socket on ``host:port``; ``OSError`` if it cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Inherited by accepted sockets: without it every answer waits out the peer's delayed ACK (~40 ms).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(LISTEN_BACKLOG)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


class _OneAtATime(socket.socket):
    """A listening socket served with Hypercorn's backlog set to 1, which asyncio takes as the number
    of connections to accept per wake-up (see the module); the kernel's queue keeps its length."""

    def listen(self, backlog: int = LISTEN_BACKLOG) -> None:
        super().listen(LISTEN_BACKLOG)


def _served(host: str, port: int, sock: socket.socket | None, *, shared: bool) -> socket.socket:
    if sock is None:
        return listen_socket(host, port)
    # Hypercorn closes the sockets it serves when it stops; a handed-in one must outlive it, so it
    # serves a duplicate (the kernel's socket listens while any descriptor of it is open).
    return _OneAtATime(fileno=os.dup(sock.fileno())) if shared else sock.dup()


async def _stop_accepting(served: socket.socket) -> None:
    """Stop taking connections from a handed-in socket, then wait ``HANDOVER_SETTLE_S`` before the shutdown.

    The socket goes on listening after this server (the front end after the probes, the other HTTP
    processes), so what arrives from now on waits in the kernel's queue for the next one. A connection
    accepted just before has usually not sent its request yet, and Hypercorn's shutdown closes such an
    idle connection unanswered ("server disconnected"); the pause lets its request arrive, after which
    the shutdown answers it like any request in flight.
    """
    asyncio.get_running_loop().remove_reader(served.fileno())
    with anyio.CancelScope(shield=True):
        await anyio.sleep(HANDOVER_SETTLE_S)


def _quiet_cancelled_connection_callbacks() -> None:
    """Keep Python 3.11 from logging a traceback for every connection Hypercorn cancels on shutdown.

    3.11's ``StreamReaderProtocol`` calls ``task.exception()`` on a connection task that was
    cancelled and reports the resulting ``CancelledError`` as an unhandled error (fixed in 3.12).
    Hypercorn cancels idle keep-alive connections when it stops, so each stop printed tracebacks
    that describe nothing wrong; every other error still reaches the previous handler.
    """
    if sys.version_info >= (3, 12):
        return
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    if previous is not None and previous.__name__ == "_quiet_handler":
        return

    def _quiet_handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if isinstance(context.get("exception"), asyncio.CancelledError) and "StreamReaderProtocol" in str(
            context.get("message", "")
        ):
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(_quiet_handler)


async def serve_quart(
    app: ASGIFramework,
    host: str,
    port: int,
    *,
    graceful_timeout_s: float = 5.0,
    sock: socket.socket | None = None,
    shared: bool = False,
    task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> NoReturn:
    """Serve ``app`` on ``host:port`` (or on ``sock``, left open) until cancelled;
    ``task_status.started(bound_port)`` once listening. ``shared``: other processes accept from
    ``sock`` too (see the module).

    Raises ``OSError`` (address in use, permission) before ``started`` if the socket cannot be bound.
    """
    served = _served(host, port, sock, shared=shared)
    _quiet_cancelled_connection_callbacks()
    # A unix socket (the daemon's owner socket for its HTTP workers) has a path, not a port: 0.
    bound_port: int = served.getsockname()[1] if served.family != socket.AF_UNIX else 0
    config = Config()
    config.graceful_timeout = graceful_timeout_s
    config.accesslog = None
    if shared and sock is not None:
        config.backlog = 1
    config.errorlog = logging.getLogger("hypercorn.error")
    stop = anyio.Event()
    finished = anyio.Event()
    server_scope = anyio.CancelScope(shield=True)

    async def run_server() -> None:
        try:
            with server_scope:
                await worker_serve(
                    wrap_app(app, config.wsgi_max_body_size, "asgi"),
                    config,
                    sockets=Sockets(secure_sockets=[], insecure_sockets=[served], quic_sockets=[]),
                    shutdown_trigger=stop.wait,
                )
        finally:
            finished.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_server)
            log.info(
                "http listening addr=%s port=%d app=%s",
                host,
                bound_port,
                getattr(app, "name", type(app).__name__),
            )
            task_status.started(bound_port)
            try:
                await anyio.sleep_forever()
            finally:
                if sock is not None:
                    await _stop_accepting(served)
                stop.set()
                with anyio.CancelScope(shield=True), anyio.move_on_after(graceful_timeout_s + 1.0):
                    await finished.wait()
                server_scope.cancel()
                log.info("http stopped port=%d", bound_port)
    finally:
        served.close()
    raise AssertionError("unreachable: sleep_forever only ends by cancellation")
