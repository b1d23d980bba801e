"""Paging against a real HTTP server that behaves as services do: a links-less listing read until a page
is empty, and a service that ignores the marker refused instead of read forever."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from quart import Quart, request

from tally.openstack._listing import UNTIL_EMPTY, ListingFailed, list_all
from tally.simulator.fakecloud import serve_fake_cloud

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
