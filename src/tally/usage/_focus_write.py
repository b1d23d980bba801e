"""Writing the FOCUS export of a query: the billing accounts read from the project registry, the
usage rated line by line (cut where a project changes account), rows written as CSV or Parquet.
"""

from __future__ import annotations

from datetime import datetime
from typing import IO

from tally.rating import (
    COLUMNS,
    RELATION_TYPE,
    Account,
    AccountSpan,
    BillingAccounts,
    FocusContext,
    FocusParquetWriter,
    PriceList,
    focus_cells,
    focus_texts,
)
from tally.store import Project, Store

from ._export import Progress, UsageQuery
from ._format import csv_text
from ._rated import rated_pages


async def _projects(store: Store) -> dict[str, Project]:
    out: dict[str, Project] = {}
    after = None
    while True:
        page = await store.list_projects(limit=1000, after=after)
        out.update((p.id, p) for p in page.items)
        if page.next_key is None:
            return out
        after = page.next_key


async def billing_accounts(store: Store, start: datetime, end: datetime) -> BillingAccounts:
    """The accounts of ``[start, end)``: the registry's ``billing_account`` relations valid in it."""
    projects = await _projects(store)
    names = {(p.cloud, p.external_id): p.name for p in projects.values()}
    spans = []
    for relation in await store.relations_between(start, end, relation_type=RELATION_TYPE):
        source, target = projects.get(relation.source_id), projects.get(relation.target_id)
        if source is None or target is None:
            continue
        account = Account(target.external_id, target.name or target.external_id, "Billing Account")
        spans.append(
            AccountSpan((source.cloud, source.external_id), account, relation.valid_from, relation.valid_to)
        )
    return BillingAccounts(names, spans)


async def write_focus(
    store: Store,
    query: UsageQuery,
    price_list: PriceList,
    fmt: str,
    out: IO[bytes],
    *,
    provider: str,
    progress: Progress | None = None,
) -> None:
    """The FOCUS export of ``query`` in ``fmt`` (``focus-csv`` or ``focus-parquet``) onto ``out``."""
    w = query.window
    accounts = await billing_accounts(store, w.start, w.end)
    ctx = FocusContext(w.start, w.end, price_list, accounts, provider)
    pages = rated_pages(store, query, price_list, cuts=accounts.cuts(), progress=progress)
    if fmt == "focus-csv":
        out.write(csv_text([COLUMNS]).encode())
        async for lines in pages:
            out.write(csv_text(focus_texts(focus_cells(line, ctx)) for line in lines).encode())
        return
    with FocusParquetWriter(out) as writer:
        async for lines in pages:
            writer.write([focus_cells(line, ctx) for line in lines])
