"""``tally period close|correct|list|show``: a cloud's billing periods by hand (the daemon closes
due ones by itself).

``close`` freezes a month's rated lines as of now (refused before the month ends, or twice);
``correct`` records what changed since the close as correction lines, and prints each project's
credit or debit; ``list`` says where each recent month stands; ``show`` writes a closed month's
frozen lines, the bytes of the rated export as of its close (``--corrections``: its correction
lines, with their reason and sync run). A refusal is one line, exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext
from datetime import timedelta
from typing import Any

import anyio

from tally.core import format_instant, utc_now
from tally.rating import RATED_COLUMNS, PeriodError, month_bounds, month_of, state_of
from tally.store import BillingRole, PeriodLine, StoreError, open_store
from tally.usage import close_month, correct_month, csv_text

from ._refuse import fail


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("period", help="close, correct, list and show billing periods")
    sub = parser.add_subparsers(dest="period_command", metavar="ACTION", required=True)
    close = sub.add_parser("close", help="close a cloud's month: its rated lines frozen as of now")
    close.add_argument(
        "--price-list", dest="price_list", required=True, help="the stored price list to rate by"
    )
    correct = sub.add_parser("correct", help="record what changed in a closed month as correction lines")
    correct.add_argument("--reason", default="usage changed after the close", help="why (kept on each line)")
    correct.add_argument("--sync-run", dest="sync_run", help="the sync run that brought the change")
    listing = sub.add_parser("list", help="where each of a cloud's recent months stands")
    listing.add_argument("--grace-hours", dest="grace_hours", type=float, default=72.0, help="default 72")
    show = sub.add_parser("show", help="a closed month's frozen lines (CSV)")
    show.add_argument("--corrections", action="store_true", help="its correction lines instead")
    show.add_argument("--out", help="write to this file (default: stdout)")
    for action, handler in (
        (close, run_close),
        (correct, run_correct),
        (listing, run_list),
        (show, run_show),
    ):
        action.add_argument("--cloud", required=True, help="the cloud")
        if action is not listing:
            action.add_argument("--period", required=True, help="the month, YYYY-MM")
        action.add_argument("--store", help="store URL (default: the configured store)")
        action.set_defaults(handler=handler)


def _url(args: argparse.Namespace) -> str:
    from tally.config import Settings

    return str(args.store or Settings().store_url)


async def run_close(args: argparse.Namespace) -> int:
    try:
        async with open_store(_url(args)) as store:
            done = await close_month(store, args.cloud, args.period, args.price_list, utc_now())
    except (PeriodError, LookupError, ValueError, StoreError) as exc:
        return fail("period", exc)
    print(f"closed period {args.period} of cloud {args.cloud} at {format_instant(done.period.closed_at)}: "
          f"{done.lines} lines")  # fmt: skip
    for project, total in done.totals.items():
        print(f"  {project}: {total}")
    return 0


async def run_correct(args: argparse.Namespace) -> int:
    try:
        async with open_store(_url(args)) as store:
            done = await correct_month(
                store, args.cloud, args.period, utc_now(), reason=args.reason, sync_run=args.sync_run
            )
    except (PeriodError, LookupError, ValueError, StoreError) as exc:
        return fail("period", exc)
    print(f"period {args.period} of cloud {args.cloud}: {len(done.lines)} correction lines")
    for project, amount in done.credits.items():
        print(f"  {project}: {'credit' if amount < 0 else 'debit'} {abs(amount)}")
    return 0


async def _months(store: BillingRole, cloud: str) -> list[tuple[str, bool]]:
    now = utc_now()
    months = {month_of(p.period_start): True for p in await store.list_periods(cloud)}
    this = month_bounds(now.strftime("%Y-%m"))[0]
    for back in (1, 0):
        start = month_bounds((this - timedelta(days=1)).strftime("%Y-%m"))[0] if back else this
        months.setdefault(month_of(start), False)
    return sorted(months.items())


async def run_list(args: argparse.Namespace) -> int:
    grace = timedelta(hours=args.grace_hours)
    try:
        async with open_store(_url(args)) as store:
            now = utc_now()
            for month, closed in await _months(store, args.cloud):
                state = state_of(month_bounds(month)[1], now, closed=closed, grace=grace)
                print(f"{month} {state.value}")
    except StoreError as exc:
        return fail("period", exc)
    return 0


async def _closed_lines(args: argparse.Namespace) -> list[PeriodLine]:
    start, _ = month_bounds(args.period)
    async with open_store(_url(args)) as store:
        if await store.get_period(args.cloud, start) is None:
            raise PeriodError(f"period {args.period} of cloud {args.cloud} is not closed")
        return await store.period_lines(args.cloud, start)


def run_show(args: argparse.Namespace) -> int:
    try:
        lines = anyio.run(_closed_lines, args)
    except (PeriodError, StoreError) as exc:
        return fail("period", exc)
    kind = "correction" if args.corrections else "closed"
    extra = ("reason", "sync_run", "recorded_at") if args.corrections else ()
    rows: list[list[Any]] = [[*RATED_COLUMNS, *extra]]
    for line in lines:
        if line.kind == kind:
            tail = (line.reason, line.sync_run, format_instant(line.recorded_at)) if args.corrections else ()
            rows.append([*(line.line[c] for c in RATED_COLUMNS), *tail])
    with open(args.out, "wb") if args.out else nullcontext(sys.stdout.buffer) as out:
        out.write(csv_text(rows).encode())
    return 0
