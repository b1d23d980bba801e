"""The simulated month's usage export, taken the way a billing engine takes it: as CSV, read back;
and the invoice the month would send, rated by a price list as ``tally usage --price-list`` rates it.

The export of the oracle's period is computed from the store by ``tally.usage`` (the code the API
and ``tally usage`` answer with), encoded as the CSV they stream, and parsed again by
``read_export``, so the check covers the numbers, their encoding and their reading.
"""

from __future__ import annotations

import io
from typing import Protocol

from tally.core import UsageWindow
from tally.rating import PriceList
from tally.simulator.oracle import Oracle
from tally.store import CatalogRole, EventsRole
from tally.usage import (
    ExportedUsage,
    UsageQuery,
    csv_header,
    csv_rows,
    csv_text,
    quantity_members,
    read_export,
    resource_pages,
    write_rated,
)


class ExportStore(CatalogRole, EventsRole, Protocol):
    """What the per-resource export reads: the types' quantity members, the usage it folds."""


async def export_of_store(store: ExportStore, oracle: Oracle) -> ExportedUsage:
    """The per-resource export of the oracle's cloud and period; open spans end at the period's end
    (the virtual now of a finished month, whatever the wall clock says)."""
    window = UsageWindow(oracle.period_from, oracle.period_to, oracle.period_to)
    query = UsageQuery(window=window, cloud=oracle.cloud)
    members = quantity_members(await store.list_resource_types())
    parts = [csv_text([csv_header(query.columns, members)])]
    async for rows in resource_pages(store, query):
        parts.append(csv_rows(rows, members))
    return read_export("".join(parts).encode())


async def invoice_of_store(
    store: EventsRole, oracle: Oracle, price_list: PriceList, fmt: str = "csv"
) -> bytes:
    """The rated export of the oracle's cloud and period (``csv``, or ``json`` with the totals per
    project), the bytes ``tally usage --price-list`` writes for it."""
    window = UsageWindow(oracle.period_from, oracle.period_to, oracle.period_to)
    out = io.BytesIO()
    await write_rated(store, UsageQuery(window=window, cloud=oracle.cloud), price_list, fmt, out)
    return out.getvalue()
