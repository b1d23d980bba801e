"""Paging against a real HTTP server that behaves as services do: a links-less listing read until a page
is empty, and a service that ignores the marker refused instead of read forever."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from quart import Quart, request

from tally.openstack._evidence import ListingInvalid
from tally.openstack._listing import PAGE_LIMIT, UNTIL_EMPTY, ListingFailed, get_json, list_all
from tally.simulation import serve_fake_cloud

pytestmark = pytest.mark.anyio

ITEMS = [{"id": f"{n:04d}"} for n in range(2500)]
# A cap below the adapter's limit, as osapi_max_limit may be set: a short page is not the last one.
CAP = 700


def listing_app(*, honour_marker: bool) -> Quart:
    app = Quart(__name__)

    @app.get("/types")
    async def types() -> Any:
        start = 0
        marker = request.args.get("marker")
        if marker is not None and honour_marker:
            start = next(i for i, item in enumerate(ITEMS) if item["id"] == marker) + 1
        limit = min(int(request.args.get("limit", CAP)), CAP)
        return {"volume_types": ITEMS[start : start + limit]}

    return app


async def listed(app: Quart) -> list[str] | ListingFailed:
    """What ``list_all`` reads from ``app``, or the refusal it raised (kept out of the task group's
    exception group)."""
    async with anyio.create_task_group() as tg:
        port = await tg.start(serve_fake_cloud, app)
        async with httpx.AsyncClient() as client:
            try:
                return await list_all(
                    client,
                    f"http://127.0.0.1:{port}/types",
                    key="volume_types",
                    links_key=UNTIL_EMPTY,
                    convert=lambda d: str(d["id"]),
                )
            except ListingFailed as exc:
                return exc
            finally:
                tg.cancel_scope.cancel()


async def test_a_listing_without_links_is_read_until_an_empty_page() -> None:
    assert await listed(listing_app(honour_marker=True)) == [item["id"] for item in ITEMS]


async def test_a_service_that_ignores_the_marker_is_refused() -> None:
    refused = await listed(listing_app(honour_marker=False))
    assert isinstance(refused, ListingFailed)
    assert "the page after marker 0699 ends at 0699 again" in str(refused)


def _paged(log: list[str], *, fail_at: str | None = None) -> httpx.AsyncClient:
    """A client of a listing of ``2 * PAGE_LIMIT + 5`` items with next links, logging each GET; the
    page after ``fail_at`` answers 500."""
    items = [{"id": f"{n:05d}"} for n in range(2 * PAGE_LIMIT + 5)]

    async def answer(request: httpx.Request) -> httpx.Response:
        marker = request.url.params.get("marker")
        log.append(f"GET {marker}")
        if marker is not None and marker == fail_at:
            return httpx.Response(500, text="boom")
        start = 0 if marker is None else int(marker) + 1
        page = items[start : start + PAGE_LIMIT]
        links = [{"rel": "next", "href": "elsewhere"}] if start + PAGE_LIMIT < len(items) else []
        return httpx.Response(200, json={"servers": page, "servers_links": links})

    return httpx.AsyncClient(transport=httpx.MockTransport(answer))


async def _walk(client: httpx.AsyncClient, convert: Any) -> list[str]:
    async with client:
        listed: list[str] = await list_all(
            client, "http://cloud/servers", key="servers", links_key="servers_links", convert=convert
        )
        return listed


async def test_the_next_page_is_asked_for_while_a_page_is_converted() -> None:
    log: list[str] = []

    def convert(item: dict[str, Any]) -> str:
        log.append(f"convert {item['id']}")
        return str(item["id"])

    listed = await _walk(_paged(log), convert)
    assert listed == [f"{n:05d}" for n in range(2 * PAGE_LIMIT + 5)]
    last_of_first = f"{PAGE_LIMIT - 1:05d}"
    assert log.index(f"GET {last_of_first}") < log.index(f"convert {last_of_first}")
    assert [line for line in log if line.startswith("GET")] == [
        "GET None",
        f"GET {last_of_first}",
        f"GET {2 * PAGE_LIMIT - 1:05d}",
    ]


async def test_a_failed_next_page_and_a_failed_conversion_raise_as_themselves() -> None:
    log: list[str] = []
    with pytest.raises(ListingFailed, match="answered 500: boom"):
        await _walk(_paged(log, fail_at=f"{PAGE_LIMIT - 1:05d}"), lambda d: str(d["id"]))

    def refuse(item: dict[str, Any]) -> str:
        raise ListingInvalid(f"server {item['id']}: no flavor")

    with pytest.raises(ListingInvalid, match="server 00000: no flavor"):
        await _walk(_paged(log), refuse)


def _dropping(drops: int) -> httpx.AsyncClient:
    """A client whose first ``drops`` requests meet a connection the server closed as it was reused."""
    calls = {"n": 0}

    def answer(req: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        if calls["n"] <= drops:
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=req)
        return httpx.Response(200, json={"volume_types": []})

    return httpx.AsyncClient(transport=httpx.MockTransport(answer))


async def test_a_kept_alive_connection_the_server_closed_is_asked_again_once() -> None:
    async with _dropping(1) as client:
        assert await get_json(client, "http://cloud/types") == {"volume_types": []}
    async with _dropping(2) as client:
        with pytest.raises(ListingFailed, match="RemoteProtocolError"):
            await get_json(client, "http://cloud/types")
