"""Writing the FOCUS export of a query: the billing accounts read from the project registry, the
usage rated line by line (cut where a project changes account), rows written as CSV or Parquet.
"""

from __future__ import annotations

from datetime import datetime
from typing import IO, Protocol

from tally.core import utc_now
from tally.rating import (
    COLUMNS,
    RELATION_TYPE,
    Account,
    AccountSpan,
    BillingAccounts,
    Cell,
    CorrectionReason,
    FocusContext,
    FocusParquetWriter,
    PriceList,
    focus_cells,
    focus_texts,
    rated_line_of,
)
from tally.store import BillingPeriod, BillingRole, EventsRole, PeriodLine, Project, ProjectsRole

from ._export import Progress, UsageQuery
from ._format import csv_text
from ._periods import pending_corrections
from ._rated import rated_pages, stored_price_list


class FocusStore(EventsRole, BillingRole, ProjectsRole, Protocol):
    """What a FOCUS export reads: the usage it rates, the price lists and corrections of closed
    periods, and the billing accounts of the project registry."""


async def _projects(store: ProjectsRole) -> dict[str, Project]:
    out: dict[str, Project] = {}
    after = None
    while True:
        page = await store.list_projects(limit=1000, after=after)
        out.update((p.id, p) for p in page.items)
        if page.next_key is None:
            return out
        after = page.next_key


async def billing_accounts(store: ProjectsRole, start: datetime, end: datetime) -> BillingAccounts:
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
    store: FocusStore,
    query: UsageQuery,
    price_list: PriceList,
    fmt: str,
    out: IO[bytes],
    *,
    provider: str,
    with_corrections: bool = False,
    progress: Progress | None = None,
) -> None:
    """The FOCUS export of ``query`` in ``fmt`` (``focus-csv`` or ``focus-parquet``) onto ``out``.

    ``with_corrections``: the correction lines of closed periods that ended by the window's start and
    were never delivered follow the usage rows (``ChargeClass`` ``Correction``, each priced by its
    period's list), and are marked delivered once the export is written: the next one leaves them out."""
    w = query.window
    pending = await pending_corrections(store, query.cloud, w.start) if with_corrections else []
    earliest = min([w.start, *(period.period_start for period, _ in pending)])
    accounts = await billing_accounts(store, earliest, w.end)
    ctx = FocusContext(w.start, w.end, price_list, accounts, provider)
    pages = rated_pages(store, query, price_list, cuts=accounts.cuts(), progress=progress)
    fixes = [await _correction_cells(store, ctx, period, line) for period, line in pending]
    if fmt == "focus-csv":
        out.write(csv_text([COLUMNS]).encode())
        async for lines in pages:
            out.write(csv_text(focus_texts(focus_cells(line, ctx)) for line in lines).encode())
        out.write(csv_text(focus_texts(cells) for cells in fixes).encode())
    else:
        with FocusParquetWriter(out) as writer:
            async for lines in pages:
                writer.write([focus_cells(line, ctx) for line in lines])
            writer.write(fixes)
    delivered: dict[tuple[str, datetime], list[int]] = {}
    for period, line in pending:
        delivered.setdefault((period.cloud, period.period_start), []).append(line.seq)
    at = utc_now()
    for (cloud, start), seqs in delivered.items():
        await store.deliver_corrections(cloud, start, seqs, at)


async def _correction_cells(
    store: BillingRole, ctx: FocusContext, period: BillingPeriod, line: PeriodLine
) -> list[Cell]:
    """A correction line's FOCUS row, priced by its period's list, billed in this export's period."""
    prices = await stored_price_list(store, period.price_list)
    own = FocusContext(ctx.period_start, ctx.period_end, prices, ctx.accounts, ctx.provider)
    return focus_cells(rated_line_of(line.line), own, CorrectionReason(line.reason or "", line.sync_run))
