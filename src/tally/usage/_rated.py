"""The rated export over a store: every resource of a query priced by a price list, a chunk at a time.

The store streams the same facts the usage export folds (``Store.open_usage_stream``); each batch
is rated by ``tally.rating.rate_facts`` in a worker thread while the next one is read, as the
export folds its own. Rating is per resource, so a rated export has no ``group_by``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from datetime import datetime
from functools import partial

from tally.rating import PriceList, RatedLine, Rater, RatingError, parse_price_list
from tally.store import BillingRole, EventsRole, StoredPriceList

from ._export import FactHistories, Progress, UsageQuery, folded_batches


def price_list_of(stored: StoredPriceList) -> PriceList:
    """The checked price list of a stored one (its versions' canonical documents)."""
    doc = {
        "name": stored.name,
        "currency": stored.currency,
        "versions": [dict(v.document) for v in stored.versions],
    }
    return parse_price_list(doc)


async def stored_price_list(store: BillingRole, name: str) -> PriceList:
    """The stored price list ``name``; ``LookupError`` when the store has none of that name."""
    stored = await store.get_price_list(name)
    if stored is None:
        raise LookupError(f"no price list {name!r} is stored (tally price-list load FILE)")
    return price_list_of(stored)


def _rate_batch(
    query: UsageQuery, rater: Rater, cuts: Sequence[datetime], batch: FactHistories
) -> tuple[list[RatedLine], RatingError | None]:
    # The refusal is returned, not raised: raised in the worker thread, it would reach the caller
    # wrapped in the task group's ExceptionGroup.
    window, project_id = query.window, query.project_id
    lines: list[RatedLine] = []
    try:
        for key, facts in batch:
            lines += rater.rate(key, facts, window, project_id=project_id, cuts=cuts)
    except RatingError as exc:
        return lines, exc
    return lines, None


async def rated_pages(
    store: EventsRole,
    query: UsageQuery,
    price_list: PriceList,
    *,
    cuts: Sequence[datetime] = (),
    progress: Progress | None = None,
) -> AsyncGenerator[list[RatedLine], None]:
    """Every rated line of the query, a chunk of resources at a time, in key order; lines are cut at
    the versions' instants and at ``cuts`` (where a project changes billing account).

    Raises ``tally.rating.RatingError`` at the first resource the price list cannot place."""
    # One rater for the export: the batches are rated one after the other, never two at once.
    rate = partial(_rate_batch, query, Rater(price_list), cuts)
    async for lines, refused in folded_batches(store, query, rate, progress):
        if refused is not None:
            raise refused
        if lines:
            yield lines
