"""``/api/v1/price-lists`` and ``/api/v1/usage/rated``: a stored list read back, usage priced by it,
the same bytes as ``tally usage --price-list``, and the 400 of a list that is not stored or cannot
place the usage."""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from http_support import READER, Api
from test_routes_usage import known_history, post

from tally.rating import load_price_list, version_document

pytestmark = pytest.mark.anyio

EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "price-list.yaml"
DAY = "from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z"


async def load(api: Api, text: str) -> None:
    price_list = load_price_list(text)
    versions = [(v.effective_from, version_document(v)) for v in price_list.versions]
    await api.store.put_price_list(price_list.name, price_list.currency, versions)


async def test_a_stored_list_reads_back(api: Api) -> None:
    await load(api, EXAMPLE.read_text())
    response = await api.get("/api/v1/price-lists", READER)
    assert response.status_code == 200
    [item] = (await response.get_json())["items"]
    assert (item["name"], item["currency"]) == ("public-eu", "EUR")
    first = item["versions"][0]
    assert first["effective_from"] == "2026-01-01T00:00:00Z"
    assert first["document"]["types"]["instance"]["flavors"]["m1.small"] == "0.0200"
    assert first["document"]["types"]["volume"]["type_modifiers"] == {"hdd": "1", "ssd": "1.5"}


async def test_usage_rated_by_a_stored_list_in_pages_and_as_csv(api: Api) -> None:
    await post(api, known_history())
    await load(api, EXAMPLE.read_text())
    items: list[dict[str, Any]] = []
    cursor = ""
    while True:
        response = await api.get(f"/api/v1/usage/rated?{DAY}&price_list=public-eu&limit=1{cursor}", READER)
        assert response.status_code == 200, await response.get_data()
        body = await response.get_json()
        items += body["items"]
        if body["next_cursor"] is None:
            break
        cursor = f"&cursor={body['next_cursor']}"
    lines = {(i["resource_id"], i["sku"]): i for i in items}
    # m1.small 10 h at 0.02; the resize to m1.large: 10 h at 0.08; the 100 GB ssd volume for 24 h
    assert lines[("vm-1", "instance.flavor.m1.small")]["cost"] == "0.20"
    assert lines[("vm-1", "instance.flavor.m1.large")]["cost"] == "0.80"
    assert lines[("vol-1", "volume.gb_hour.ssd")]["cost"] == "0.36"
    response = await api.client.get(
        f"/api/v1/usage/rated?{DAY}&price_list=public-eu",
        headers={**api.bearer(READER), "Accept": "text/csv"},
    )
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO((await response.get_data()).decode())))
    assert [r["cost"] for r in rows] == [i["cost"] for i in items]
    assert sum(Decimal(r["cost"]) for r in rows) == Decimal("1.36")


async def test_a_list_not_stored_or_that_cannot_place_the_usage_is_a_400(api: Api) -> None:
    await post(api, known_history())
    response = await api.get(f"/api/v1/usage/rated?{DAY}&price_list=nope", READER)
    assert response.status_code == 400
    assert response.content_type == "application/problem+json"
    [error] = (await response.get_json())["errors"]
    assert error == {
        "loc": "query.price_list",
        "msg": "no price list 'nope' is stored (tally price-list load FILE)",
    }
    await load(api, EXAMPLE.read_text().replace("2026-01-01T00:00:00Z", "2026-03-01T12:00:00Z"))
    response = await api.get(f"/api/v1/usage/rated?{DAY}&price_list=public-eu", READER)
    assert response.status_code == 400
    [error] = (await response.get_json())["errors"]
    assert error["loc"] == "query.price_list"
    assert error["msg"].endswith("no price version is in force at 2026-03-01T00:00:00Z")
