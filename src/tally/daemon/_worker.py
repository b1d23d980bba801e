"""An HTTP worker process of ``tally run``: the Reporting API on the daemon's listening socket, nothing else.

Started by the main process (``_workers``) as ``python -m tally run --http-worker`` (the command
line's garbage-collector policy and metrics options apply, as in ``tally run``). The first line on
stdin is the daemon's settings (JSON, secrets included: a pipe, never the command line), the path of
the main process's owner socket and the number of the descriptor of its listening socket, which the
worker inherited: it accepts from it beside the main process once it can answer, one connection
per wake-up (``tally.http.serve_quart``'s ``shared``). Stdin then stays open as the worker's
lifeline (its end means the main process is gone, and the worker stops).

A worker runs no actor: no scheduler, no collector, no sender, no gauge refresher; it opens a pool
of its own on the store and answers the API's routes with its own ingest pipeline, cursor keyring,
remembered tokens and keystone cache (each is correct per process, as on replicas of one database).
What only the main process knows is asked of it (``ToOwner``): ``/internal/*`` (the cloud's
scheduler runs the triggered sync), ``/healthz`` and ``/readyz`` (the actors' checks) and
``/metrics`` (the main process merges every worker's counters into its own).

SIGTERM drains it (requests in flight get the graceful timeout); SIGINT is left to the main process,
which drains the workers itself, so that a Ctrl-C does not stop them before it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
from typing import Any

import anyio
import httpx
import orjson

from tally.config import Settings, setup_logging

log = logging.getLogger(__name__)

#: The paths a worker forwards to the main process (a prefix ending in ``/``, else the exact path).
OWNER_PATHS = ("/internal/", "/healthz", "/readyz", "/metrics")
_HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"transfer-encoding", b"content-length"})


def owned(path: str) -> bool:
    """True for a path only the main process can answer."""
    return any(path.startswith(p) if p.endswith("/") else path == p for p in OWNER_PATHS)


class ToOwner:
    """ASGI: the owner's paths forwarded to the main process over its unix socket, the rest to ``app``.

    The answer is the main process's, status, headers and bytes. A client that goes away cancels the
    forwarded request, and the main process cancels its handler (a held sync is then recorded failed,
    as when the client talks to the main process itself)."""

    def __init__(self, app: Any, owner_socket: str) -> None:
        self.app = app
        self.client = httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(uds=owner_socket), base_url="http://tally-owner", timeout=None
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not owned(scope["path"]):
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        async with anyio.create_task_group() as tg:

            async def until_disconnect() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                tg.cancel_scope.cancel()

            tg.start_soon(until_disconnect)
            await self._forward(scope, body, send)
            tg.cancel_scope.cancel()

    async def _forward(self, scope: Any, body: bytes, send: Any) -> None:
        target = scope["raw_path"] or scope["path"].encode()
        if scope["query_string"]:
            target += b"?" + scope["query_string"]
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP_BY_HOP]
        try:
            answer = await self.client.request(
                scope["method"], target.decode("latin-1"), headers=headers, content=body
            )
        except httpx.TransportError as exc:
            log.error("http worker cannot reach the main process path=%s error=%s", scope["path"], exc)
            text = b"the daemon's main process does not answer\n"
            await send(
                {"type": "http.response.start", "status": 503, "headers": [(b"content-type", b"text/plain")]}
            )
            await send({"type": "http.response.body", "body": text})
            return
        relayed = [(k, v) for k, v in answer.headers.raw if k.lower() not in _HOP_BY_HOP]
        relayed.append((b"content-length", str(len(answer.content)).encode()))
        await send({"type": "http.response.start", "status": answer.status_code, "headers": relayed})
        await send({"type": "http.response.body", "body": answer.content})


async def serve_worker(settings: Settings, listening: socket.socket, owner_socket: str) -> None:
    """Serve the Reporting API on ``listening`` (the main process's socket) beside the main process
    until SIGTERM or the end of stdin."""
    from tally.app import pipeline_of
    from tally.http import ReportingServices, create_reporting_app, keystone_tokens
    from tally.store import open_store

    async with open_store(settings.store_url, max_conns=settings.reporting_db_max_conns) as store:
        services = ReportingServices(
            store=store,
            pipeline=pipeline_of(store, settings),
            settings=settings,
            keystone=keystone_tokens(settings),
        )
        app = ToOwner(create_reporting_app(services), owner_socket)
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(
                    _serve, app, settings, listening, min(5.0, settings.shutdown_grace_s), name="http"
                )
                print("ready", flush=True)
                tg.start_soon(_until_stdin_ends, tg.cancel_scope)
                with anyio.open_signal_receiver(signal.SIGTERM) as signals:
                    async for _ in signals:
                        log.info("http worker draining")
                        break
                tg.cancel_scope.cancel()
        finally:
            listening.close()
            await app.client.aclose()


async def _serve(
    app: Any,
    settings: Settings,
    listening: socket.socket,
    graceful_timeout_s: float,
    *,
    task_status: anyio.abc.TaskStatus[int],
) -> None:
    from tally.http import serve_quart

    await serve_quart(
        app,
        settings.reporting_http_addr,
        settings.reporting_http_port,
        graceful_timeout_s=graceful_timeout_s,
        sock=listening,
        shared=True,
        task_status=task_status,
    )


async def _until_stdin_ends(scope: anyio.CancelScope) -> None:
    # Watched by the event loop, not read in a thread: a thread blocked in read() would hold the
    # process's exit until the pipe ends.
    ended = anyio.Event()
    fd = sys.stdin.fileno()

    def readable() -> None:
        if not os.read(fd, 4096):
            ended.set()

    loop = asyncio.get_running_loop()
    loop.add_reader(fd, readable)
    try:
        await ended.wait()
    finally:
        loop.remove_reader(fd)
    log.warning("http worker stopping: the daemon's main process is gone")
    scope.cancel()


def run_http_worker() -> int:
    """A worker's life (``tally run --http-worker``, as the main process starts it): the handed
    settings from stdin, then serving until SIGTERM or the end of stdin; the exit code."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    handed = orjson.loads(sys.stdin.buffer.readline())
    settings = Settings(**handed["settings"])
    setup_logging(settings.log_level, settings.log_format)
    listening = socket.socket(fileno=int(handed["listening"]))
    anyio.run(serve_worker, settings, listening, handed["owner"])
    return 0
