"""The simulated month's usage export, taken the way a billing engine takes it: as CSV, read back.

The export of the oracle's period is computed from the store by ``tally.usage`` (the code the API
and ``tally usage`` answer with), encoded as the CSV they stream, and parsed again by
``read_export``, so the check covers the numbers, their encoding and their reading.
"""

from __future__ import annotations

from tally.core import UsageWindow
from tally.store import Store
from tally.usage import (
    ExportedUsage,
    UsageQuery,
    csv_header,
    csv_rows,
    csv_text,
    quantity_members,
    read_export,
    resource_pages,
)

from .oracle import Oracle


async def export_of_store(store: Store, oracle: Oracle) -> ExportedUsage:
    """The per-resource export of the oracle's cloud and period; open spans end at the period's end
    (the virtual now of a finished month, whatever the wall clock says)."""
    window = UsageWindow(oracle.period_from, oracle.period_to, oracle.period_to)
    query = UsageQuery(window=window, cloud=oracle.cloud)
    members = quantity_members(await store.list_resource_types())
    parts = [csv_text([csv_header(query.columns, members)])]
    async for rows in resource_pages(store, query):
        parts.append(csv_rows(rows, members))
    return read_export("".join(parts).encode())
