"""Billing periods over a store: closing a cloud's month (its rated lines frozen as of the close),
recording the corrections found since, and delivering them once in the next FOCUS export.

The rules are ``tally.rating``'s (``state_of``, ``correction_lines``); the freeze is the store's.
``tally period`` and the daemon's closer call these.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Protocol

from tally.core import UsageWindow, format_instant
from tally.rating import (
    DEFAULT_GRACE,
    PeriodError,
    PeriodState,
    PriceList,
    RatedLine,
    correction_lines,
    credits_and_debits,
    month_bounds,
    month_of,
    project_totals,
    rated_json,
    state_of,
)
from tally.store import BillingPeriod, BillingRole, EventsRole, PeriodLine

from ._export import UsageQuery
from ._rated import rated_pages, stored_price_list


class PeriodsStore(BillingRole, EventsRole, Protocol):
    """What closing or correcting a period uses: its price list and periods, and the usage it rates."""


@dataclass(frozen=True, slots=True)
class Closed:
    """A period just closed: how many lines were frozen, and each project's total."""

    period: BillingPeriod
    lines: int
    totals: dict[str, Decimal]


@dataclass(frozen=True, slots=True)
class Corrected:
    """Corrections just recorded for a closed period, and each project's credit or debit."""

    period: BillingPeriod
    lines: list[dict[str, str]]
    credits: dict[str, Decimal]


async def _rated(
    store: EventsRole,
    cloud: str,
    bounds: tuple[datetime, datetime],
    price_list: PriceList,
    now: datetime,
    *,
    as_of: datetime | None,
) -> list[RatedLine]:
    query = UsageQuery(window=UsageWindow(bounds[0], bounds[1], now, as_of), cloud=cloud)
    out: list[RatedLine] = []
    async for lines in rated_pages(store, query, price_list):
        out += lines
    return out


async def close_month(store: PeriodsStore, cloud: str, month: str, price_list: str, now: datetime) -> Closed:
    """Close ``month`` of ``cloud`` at ``now``: its lines rated as of now, frozen. Refused (``PeriodError``)
    before the month has ended, or when it is closed already."""
    start, end = month_bounds(month)
    if now < end:
        raise PeriodError(f"period {month} of cloud {cloud} has not ended (it ends at {format_instant(end)})")
    found = await store.get_period(cloud, start)
    if found is not None:
        raise PeriodError(
            f"period {month} of cloud {cloud} is already closed (at {format_instant(found.closed_at)})"
        )
    prices = await stored_price_list(store, price_list)
    lines = await _rated(store, cloud, (start, end), prices, now, as_of=now)
    period = BillingPeriod(cloud, start, end, price_list, now)
    await store.close_period(period, [rated_json(line, prices) for line in lines])
    return Closed(period, len(lines), project_totals(lines))


async def correct_month(
    store: PeriodsStore, cloud: str, month: str, now: datetime, *, reason: str, sync_run: str | None = None
) -> Corrected:
    """Record the differences between ``month`` rated now and what it booked (``PeriodError`` when it
    is not closed). Nothing is recorded when nothing changed."""
    start, end = month_bounds(month)
    period = await store.get_period(cloud, start)
    if period is None:
        raise PeriodError(
            f"period {month} of cloud {cloud} is not closed: its usage is still live, nothing to correct"
        )
    booked = [line.line for line in await store.period_lines(cloud, start)]
    price_list = await stored_price_list(store, period.price_list)
    rated_now = await _rated(store, cloud, (start, end), price_list, now, as_of=None)
    current = [rated_json(line, price_list) for line in rated_now]
    fixes = correction_lines(booked, current)
    if fixes:
        await store.add_period_corrections(cloud, start, fixes, reason=reason, sync_run=sync_run, at=now)
    return Corrected(period, fixes, credits_and_debits(fixes))


def _next_month(start: datetime) -> datetime:
    return month_bounds(start.strftime("%Y-%m"))[1]


async def due_months(
    store: BillingRole, cloud: str, now: datetime, grace: timedelta = DEFAULT_GRACE
) -> list[str]:
    """The months of ``cloud`` due to close at ``now``, oldest first: each month after the newest one
    closed (a daemon that was down closes what it missed), or, when none ever closed, the month before
    now's; a month is due once its grace is over (the daemon's closer asks this at each tick)."""
    periods = await store.list_periods(cloud)
    this_start, _ = month_bounds(now.strftime("%Y-%m"))
    last_start = month_bounds((this_start - timedelta(days=1)).strftime("%Y-%m"))[0]
    start = _next_month(periods[-1].period_start) if periods else last_start
    due = []
    while start <= last_start:
        end = _next_month(start)
        if state_of(end, now, closed=False, grace=grace) is PeriodState.DUE:
            due.append(month_of(start))
        start = end
    return due


async def pending_corrections(
    store: BillingRole, cloud: str | None, before: datetime
) -> list[tuple[BillingPeriod, PeriodLine]]:
    """Correction lines not yet delivered, of the closed periods (of ``cloud``, or every cloud's) that
    ended by ``before``, in period and line order."""
    out: list[tuple[BillingPeriod, PeriodLine]] = []
    for period in await store.list_periods(cloud):
        if period.period_end > before:
            continue
        for line in await store.period_lines(period.cloud, period.period_start):
            if line.kind == "correction" and line.delivered_at is None:
                out.append((period, line))
    return out
