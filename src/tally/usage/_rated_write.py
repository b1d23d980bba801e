"""Writing a rated export: CSV lines, or one JSON document with the per-project totals.

Both are written as the store is read (a chunk of resources at a time); the JSON's ``totals`` come
last, the sums of the lines written before them. ``tally usage --price-list`` and the API's
``/api/v1/usage?price_list=`` write the same bytes.
"""

from __future__ import annotations

from decimal import Decimal
from typing import IO

import orjson

from tally.core import format_instant
from tally.rating import (
    RATED_COLUMNS,
    PriceList,
    add_totals,
    rated_cells,
    rated_head,
    rated_json,
    totals_json,
)
from tally.store import EventsRole

from ._export import Progress, UsageQuery
from ._format import csv_text
from ._rated import rated_pages


def rated_json_head(query: UsageQuery, price_list: PriceList) -> bytes:
    w = query.window
    head = {
        "from": format_instant(w.start),
        "to": format_instant(w.end),
        "as_of": format_instant(w.as_of) if w.as_of is not None else None,
        **rated_head(price_list),
    }
    return orjson.dumps(head)[:-1] + b',"items":['


async def write_rated(
    store: EventsRole,
    query: UsageQuery,
    price_list: PriceList,
    fmt: str,
    out: IO[bytes],
    *,
    progress: Progress | None = None,
) -> None:
    """The rated export of ``query`` in ``fmt`` (``csv`` or ``json``) onto ``out``."""
    totals: dict[str, Decimal] = {}
    first = True
    out.write(csv_text([RATED_COLUMNS]).encode() if fmt == "csv" else rated_json_head(query, price_list))
    async for lines in rated_pages(store, query, price_list, progress=progress):
        if fmt == "csv":
            out.write(csv_text(rated_cells(line, price_list) for line in lines).encode())
            continue
        add_totals(totals, lines)
        for line in lines:
            out.write((b"" if first else b",") + orjson.dumps(rated_json(line, price_list)))
            first = False
    if fmt == "json":
        out.write(b'],"totals":' + orjson.dumps(totals_json(dict(sorted(totals.items())))) + b"}\n")
