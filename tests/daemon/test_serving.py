"""serve_quart: serves inside our task group, reports its port, and finishes requests on shutdown."""

from __future__ import annotations

import anyio
import httpx
import pytest
from quart import Quart

from tally.http import serve_quart

pytestmark = pytest.mark.anyio


def slow_app(entered: anyio.Event | None = None) -> Quart:
    app = Quart("serving-test")

    @app.get("/hello")
    async def hello() -> str:
        return "hello"

    @app.get("/slow")
    async def slow() -> str:
        if entered is not None:
            entered.set()
        await anyio.sleep(0.3)
        return "finished"

    return app


async def test_serves_on_the_port_it_reports_then_stops_on_cancel() -> None:
    async with anyio.create_task_group() as tg:
        port = await tg.start(serve_quart, slow_app(), "127.0.0.1", 0)
        async with httpx.AsyncClient() as client:
            response = await client.get(f"http://127.0.0.1:{port}/hello")
        assert (response.status_code, response.text) == (200, "hello")
        tg.cancel_scope.cancel()
    with pytest.raises(OSError):
        await anyio.connect_tcp("127.0.0.1", port)


async def test_request_in_flight_finishes_when_the_server_is_cancelled() -> None:
    results: list[str] = []
    entered = anyio.Event()
    async with anyio.create_task_group() as outer:
        server_scope = anyio.CancelScope()
        port = await outer.start(_serve_in, slow_app(entered), server_scope)

        async def fetch() -> None:
            async with httpx.AsyncClient() as client:
                response = await client.get(f"http://127.0.0.1:{port}/slow")
                results.append(response.text)

        outer.start_soon(fetch)
        with anyio.fail_after(5):
            await entered.wait()  # the request is now being handled
        server_scope.cancel()
    assert results == ["finished"]


async def _serve_in(app: Quart, scope: anyio.CancelScope, *, task_status: anyio.abc.TaskStatus[int]) -> None:
    with scope:
        await serve_quart(app, "127.0.0.1", 0, graceful_timeout_s=2.0, task_status=task_status)


async def test_port_in_use_raises_before_started() -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    try:
        with pytest.raises(OSError, match="in use"):
            await serve_quart(slow_app(), "127.0.0.1", port)
    finally:
        await listener.aclose()
