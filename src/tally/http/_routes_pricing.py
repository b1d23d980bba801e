"""``/api/v1/price-lists`` and ``/api/v1/usage/rated``: the stored price lists, and usage priced by one.

The rated lines are ``tally.rating``'s (docs/invoicing.md): one per resource, project, state, SKU
and price version, with its list price, quantity after the list's rules and cost, ROUND_HALF_UP
to the currency's minor unit per line. JSON pages follow the usage route's resource cursors;
``Accept: text/csv`` streams the whole rated export, the bytes ``tally usage --price-list`` writes.
A price list the store does not hold, or usage it cannot place, is a 400 naming
``query.price_list``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from pydantic import Field
from quart import Response

from tally.core import UsageWindow, format_instant, usage_fact, utc_now
from tally.rating import (
    RATED_COLUMNS,
    PriceList,
    RatedLine,
    RatingError,
    rate_facts,
    rated_cells,
    rated_json,
    version_document,
)
from tally.usage import UsageQuery, csv_text, price_list_of, rated_pages, stored_price_list

from ._auth import narrow
from ._contract import Call, Instant, Model, Reply, Router
from ._models import Answer, JsonObject, Text, cursor_of
from ._problems import invalid
from ._routes_usage import CSV, checked_window, wants_csv

log = logging.getLogger(__name__)

router = Router("pricing")

RATED_CSV_SCHEMA = {
    "type": "string",
    "description": f"a header line ({', '.join(RATED_COLUMNS)}), then one line per resource, project, "
    "state, SKU and price version",
}


class PriceListVersionOut(Answer):
    effective_from: str
    loaded_at: str
    document: JsonObject


class PriceListOut(Answer):
    name: str
    currency: str
    versions: list[PriceListVersionOut]


class PriceListPage(Answer):
    items: list[PriceListOut]
    next_cursor: str | None


@router.route(
    "GET",
    "/api/v1/price-lists",
    summary="Every stored price list with its versions (canonical documents, amounts as decimal texts)",
    auth="api",
    replies=(Reply(200, "all price lists (one page)", PriceListPage),),
)
async def list_price_lists(call: Call) -> Any:
    stored = await call.services.store.list_price_lists()
    items = []
    for item in stored:
        checked = price_list_of(item)  # the document as this build reads it
        versions = [
            {
                "effective_from": format_instant(v.effective_from),
                "loaded_at": format_instant(row.loaded_at),
                "document": version_document(v),
            }
            for v, row in zip(checked.versions, item.versions, strict=True)
        ]
        items.append({"name": item.name, "currency": item.currency, "versions": versions})
    return {"items": items, "next_cursor": None}


class RatedParams(Model):
    from_: Instant = Field(alias="from", description="inclusive start (RFC 3339 with a zone)")
    to: Instant = Field(description="exclusive end (RFC 3339 with a zone)")
    price_list: str = Field(min_length=1, max_length=64, description="the stored price list to rate by")
    as_of: Instant | None = Field(default=None, description="count only events received before this")
    cloud: str | None = Text
    platform: str | None = Text
    project_id: str | None = Text
    resource_type: str | None = Text
    limit: int = Field(default=100, ge=1, le=1000, description="resources per page")
    cursor: str | None = cursor_of("usage")


class RatedItem(Answer):
    cloud: str
    resource_type: str
    resource_id: str
    project_id: str
    state: str
    sku: str
    charge_start: str
    charge_end: str
    presence_s: str
    billed_s: str
    consumed_quantity: str
    consumed_unit: str
    factor: str
    pricing_quantity: str
    unit_price: str
    cost: str
    currency: str
    price_list: str
    version_from: str


class RatedPage(Answer):
    from_: str = Field(alias="from")
    to: str
    as_of: str | None
    price_list: str
    currency: str
    items: list[RatedItem]
    next_cursor: str | None


def _query(call: Call) -> UsageQuery:
    q: RatedParams = call.query
    checked_window(q.from_, q.to)
    cloud, project_id = narrow(call.principal, q.cloud, q.project_id)
    now = utc_now()
    return UsageQuery(
        window=UsageWindow(q.from_, q.to, now if q.as_of is None else min(now, q.as_of), q.as_of),
        cloud=cloud,
        platform=q.platform,
        project_id=project_id,
        resource_type=q.resource_type,
    )


async def _price_list(call: Call) -> PriceList:
    try:
        return await stored_price_list(call.services.store, call.query.price_list)
    except LookupError as exc:
        raise invalid("query.price_list", str(exc.args[0])) from None


@router.route(
    "GET",
    "/api/v1/usage/rated",
    summary="Usage in [from, to) priced by a stored price list: one line per resource, state, SKU and "
    "version (JSON pages, or the whole rated export as CSV with Accept: text/csv)",
    auth="api",
    query=RatedParams,
    replies=(
        Reply(200, "a page of rated lines (or text/csv)", RatedPage, other_media=((CSV, RATED_CSV_SCHEMA),)),
    ),
)
async def rated_usage(call: Call) -> Any:
    query = _query(call)
    price_list = await _price_list(call)
    store = call.services.store
    if wants_csv():
        response = Response(_stream_csv(call, query, price_list), content_type="text/csv; charset=utf-8")
        response.timeout = None  # a month of a large cloud streams for longer than Quart's 60 s
        return response
    q: RatedParams = call.query
    seal = await call.services.cursors.seal()
    page = await store.usage_histories(query.scope, limit=q.limit, after=seal.decode_resource_key(q.cursor))
    lines: list[RatedLine] = []
    try:
        for key, events in page.items:
            facts = [usage_fact(e) for e in events]
            lines += rate_facts(key, facts, query.window, price_list, project_id=query.project_id)
    except RatingError as exc:
        raise invalid("query.price_list", str(exc)) from None
    w = query.window
    return {
        "from": format_instant(w.start),
        "to": format_instant(w.end),
        "as_of": format_instant(w.as_of) if w.as_of is not None else None,
        "price_list": price_list.name,
        "currency": price_list.currency,
        "items": [rated_json(line, price_list) for line in lines],
        "next_cursor": seal.encode_resource_key(page.next_key),
    }


async def _stream_csv(call: Call, query: UsageQuery, price_list: PriceList) -> AsyncIterator[bytes]:
    yield csv_text([RATED_COLUMNS]).encode()
    try:
        async with aclosing(rated_pages(call.services.store, query, price_list)) as pages:
            async for lines in pages:
                yield csv_text(rated_cells(line, price_list) for line in lines).encode()
    except Exception:
        # The status line is out: aborting the transfer tells the client the export is not whole.
        log.exception("rated usage CSV export failed midway")
        raise
