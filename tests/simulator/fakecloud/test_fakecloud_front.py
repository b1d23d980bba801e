"""The plain ASGI front of the fake cloud answers its routes with the bytes Quart sends for them."""

from __future__ import annotations

import re

import anyio
import httpx
import pytest
from fakecloud_support import Fake, small_world

from tally.simulation import serve_fake_cloud
from tally.simulator.fakecloud import create_fake_cloud_app

pytestmark = pytest.mark.anyio

# Every service route the front holds, with the queries and refusals a sync or a client may meet.
REQUESTS = [
    ("/compute", False, ""),
    ("/compute/v2.1/", False, ""),
    ("/compute/v2.1/servers/detail?all_tenants=1&limit=1", True, "compute 2.79"),
    ("/compute/v2.1/servers/detail?all_tenants=1", True, "compute 2.79"),
    ("/compute/v2.1/servers/detail?all_tenants=1&deleted=1&changes-since=2026-07-01T00:00:00Z", True, ""),
    ("/compute/v2.1/servers/detail?changes-since=bogus", True, ""),
    ("/compute/v2.1/servers/detail?limit=x", True, ""),
    ("/compute/v2.1/servers/detail", True, "compute 9.9"),
    ("/compute/v2.1/servers/detail", False, ""),
    ("/compute/v2.1/flavors/detail?is_public=None", True, "compute 2.61"),
    ("/volume/v3/", False, ""),
    ("/volume/v3/volumes/detail?all_tenants=1", True, "volume 3.60"),
    ("/volume/v3/PROJECT/volumes/detail?all_tenants=1&limit=1", True, ""),
    ("/volume/v3/PROJECT/types", True, ""),
    ("/network/v2.0", False, ""),
    ("/network/v2.0/floatingips?limit=1", True, ""),
    ("/image", False, ""),
    ("/image/v2/images", True, ""),
    ("/load-balancer/", False, ""),
    ("/load-balancer/v2/lbaas/loadbalancers", True, ""),
]


async def _raw(port: int, path: str, token: str | None, version: str) -> bytes:
    lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    if token:
        lines.append(f"X-Auth-Token: {token}")
    if version:
        lines.append(f"OpenStack-API-Version: {version}")
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(("\r\n".join(lines) + "\r\n\r\n").encode())
        chunks = []
        async for chunk in stream:
            chunks.append(chunk)
    return re.sub(rb"\r\ndate: [^\r]*", b"\r\ndate: -", b"".join(chunks))


async def test_the_front_sends_what_quart_sends_for_every_service_route() -> None:
    world = small_world()
    app = create_fake_cloud_app(world)
    front = app.asgi_app
    passed_on: list[str] = []
    fallback = front._fallback  # type: ignore[attr-defined]

    async def counting(scope: dict[str, object], receive: object, send: object) -> None:
        passed_on.append(str(scope.get("path")))
        await fallback(scope, receive, send)

    front._fallback = counting  # type: ignore[attr-defined]
    project = world.projects[0].id
    async with anyio.create_task_group() as tg:
        port = await tg.start(serve_fake_cloud, app)
        async with httpx.AsyncClient(timeout=30) as client:
            token = await Fake(f"http://127.0.0.1:{port}", app.config["FAKE_CLOUD"], client).token()
        passed_on.clear()

        async def answers() -> list[bytes]:
            return [
                await _raw(port, path.replace("PROJECT", project), token if authed else None, version)
                for path, authed, version in REQUESTS
            ]

        by_front = await answers()
        assert passed_on == []  # the front answered every one

        @app.before_request
        async def noop() -> None:
            return None

        by_quart = await answers()
        assert len(passed_on) == len(REQUESTS)  # a hook of the app's own: Quart answered every one
        tg.cancel_scope.cancel()
    statuses = {answer.split(b" ", 2)[1] for answer in by_front}
    assert statuses >= {b"200", b"400", b"401", b"406"}
    for (path, _, _), front_answer, quart_answer in zip(REQUESTS, by_front, by_quart, strict=True):
        assert front_answer == quart_answer, path
