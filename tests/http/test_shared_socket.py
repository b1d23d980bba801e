"""``serve_quart(..., shared=True)``: servers accepting from one listening socket (the daemon's HTTP workers).

Two servers, each on an event loop of its own (a thread each, as the daemon has a process each), serve
the same socket. A server whose loop is busy takes no new connection: the other accepts it.
"""

from __future__ import annotations

import socket
import threading
import time
from functools import partial
from typing import Any

import httpx
from anyio.from_thread import start_blocking_portal

from tally.http import listen_socket, serve_quart

BUSY_S = 3.0


def named(name: str) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"1")]})
        await send({"type": "http.response.body", "body": name.encode()})

    return app


def test_a_busy_server_leaves_new_connections_to_the_other() -> None:
    listening = listen_socket("127.0.0.1", 0)
    port = listening.getsockname()[1]
    busy = threading.Event()
    busy_until: list[float] = []

    async def block() -> None:
        busy.set()
        time.sleep(BUSY_S)  # noqa: ASYNC251 - the loop itself held, as a process busy answering is
        busy_until.append(time.monotonic())

    try:
        with start_blocking_portal() as portal_a, start_blocking_portal() as portal_b:
            serve = partial(serve_quart, host="127.0.0.1", port=0, sock=listening, shared=True)
            served = [
                portal.start_task(partial(serve, named(name)))
                for portal, name in ((portal_a, "a"), (portal_b, "b"))
            ]
            assert [p for _, p in served] == [port, port]
            blocked = portal_a.start_task_soon(block)
            assert busy.wait(5)
            answers = []
            for _ in range(8):
                with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
                    answers.append((client.get("/").text, time.monotonic()))
            blocked.result()
            # Those answered after the busy spell may be either's (a loaded host is slow to send eight).
            while_busy = [name for name, at in answers if at < busy_until[0]]
            assert while_busy
            assert set(while_busy) == {"b"}
            for future, _ in served:
                future.cancel()
    finally:
        listening.close()


def test_a_connection_accepted_as_the_server_leaves_the_socket_is_answered() -> None:
    """The daemon's probes hand their socket to the front end: a client connected just before the
    probes' server stops, whose request comes a moment later, is answered, not dropped as idle."""
    listening = listen_socket("127.0.0.1", 0)
    port = listening.getsockname()[1]
    try:
        with start_blocking_portal() as portal:
            future, _ = portal.start_task(
                partial(serve_quart, named("p"), "127.0.0.1", 0, sock=listening, graceful_timeout_s=1.0)
            )
            with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
                time.sleep(0.2)  # the server's loop accepts it
                future.cancel()
                time.sleep(0.05)  # the server is leaving the socket when the request arrives
                client.sendall(b"GET / HTTP/1.1\r\nHost: tally\r\nConnection: close\r\n\r\n")
                answer = b""
                while chunk := client.recv(4096):
                    answer += chunk
            assert answer.startswith(b"HTTP/1.1 200"), answer
            assert answer.endswith(b"\r\n\r\np")
    finally:
        listening.close()
