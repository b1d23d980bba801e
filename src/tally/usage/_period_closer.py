"""The period closer: one actor per cloud that closes its due months and records their corrections.

At start and then every ``TALLY_BILLING_CLOSE_INTERVAL_S`` it closes each month of the cloud whose
grace window (``TALLY_BILLING_GRACE_HOURS`` after its end) is over, rated by the price list
``TALLY_BILLING_PRICE_LIST``, and compares the newest closed month with its usage now: what a sync
or a late notification changed since is recorded as correction lines, their reason naming the
change and their sync run the newest run of the cloud since the close. A tick that fails (the store
away, a price list that cannot place the usage) is logged and tried again at the next tick: a
month not closed stays due, and nothing half-closed is ever stored (a close is one transaction).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Protocol

import anyio

from tally.actors import ActorContext
from tally.core import utc_now
from tally.rating import PeriodError, month_of
from tally.store import StoreError, SyncRecordsRole

from ._periods import PeriodsStore, close_month, correct_month, due_months

log = logging.getLogger(__name__)


class CloserStore(PeriodsStore, SyncRecordsRole, Protocol):
    """What the closer uses: the periods' store, and the sync runs that name a correction's run."""


REASON = "usage changed after the close (late notifications or a sync's corrections)"


async def close_and_correct(
    store: CloserStore, cloud: str, price_list: str, now: datetime, *, grace: timedelta
) -> tuple[list[str], int]:
    """One tick: the months closed, and the correction lines recorded for the newest closed month."""
    closed = []
    for month in await due_months(store, cloud, now, grace):
        done = await close_month(store, cloud, month, price_list, now)
        log.info("period closed cloud=%s period=%s lines=%d", cloud, month, done.lines)
        closed.append(month)
    periods = await store.list_periods(cloud)
    if not periods:
        return closed, 0
    newest = periods[-1]
    runs = await store.sync_runs_between(cloud, newest.closed_at, now + timedelta(microseconds=1))
    sync_run = str(runs[-1]["id"]) if runs else None
    fixed = await correct_month(
        store, cloud, month_of(newest.period_start), now, reason=REASON, sync_run=sync_run
    )
    if fixed.lines:
        log.info(
            "period corrected cloud=%s period=%s lines=%d sync_run=%s",
            cloud, month_of(newest.period_start), len(fixed.lines), sync_run,
        )  # fmt: skip
    return closed, len(fixed.lines)


async def run_period_closer(
    store: CloserStore,
    cloud: str,
    price_list: str,
    ctx: ActorContext,
    *,
    grace: timedelta,
    interval_s: float,
    clock: Callable[[], datetime] = utc_now,
) -> None:
    """Close ``cloud``'s due months and record their corrections at each tick, until asked to stop."""
    ctx.started()
    while not ctx.stopping:
        try:
            await close_and_correct(store, cloud, price_list, clock(), grace=grace)
        except (PeriodError, LookupError, ValueError, StoreError) as exc:
            log.warning("period closer tick failed cloud=%s reason=%s", cloud, exc)
        with anyio.move_on_after(interval_s):
            await ctx.wait_stopping()
