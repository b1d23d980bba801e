"""Billing periods and their corrections: a cloud's month, when it closes, and what changed since. Pure.

A month is ``open`` until its end, then in ``grace`` for a window (72 hours by default, as the
reference engine) in which late events are still taken in as if on time, then due to close; once
closed, its rated lines are frozen in the store. Usage that changes afterwards (a late event, a
sync's correction) never edits them: ``correction_lines`` compares the month rated now with the
frozen lines (and the corrections already recorded) and answers the differences, per resource,
project, state, SKU and span, non-zero only, each a line whose quantities and cost are the delta.
A project's credit (negative) or debit is the sum of its correction lines' costs.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Final

DEFAULT_GRACE: Final = timedelta(hours=72)
_MONTH = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")
# The members of a rated line (``rated_json``) that name it, and those a correction subtracts.
KEY_MEMBERS: Final = ("cloud", "resource_type", "resource_id", "project_id", "state", "sku", "charge_start")
DELTA_MEMBERS: Final = ("presence_s", "billed_s", "consumed_quantity", "pricing_quantity", "cost")
_MONEY_MEMBERS: Final = ("consumed_quantity", "pricing_quantity", "cost")


class PeriodError(ValueError):
    """A period that cannot be named, closed or corrected; the message says which and why."""


class PeriodState(enum.Enum):
    """Where a cloud's month stands."""

    OPEN = "open"  # not ended: usage still accrues
    GRACE = "grace"  # ended, within the grace window: late events still count as on time
    DUE = "due"  # the grace window is over: the daemon closes it (or ``tally period close``)
    CLOSED = "closed"  # closed: its lines are frozen; changes arrive as corrections


def month_bounds(month: str) -> tuple[datetime, datetime]:
    """``[start, end)`` of ``YYYY-MM`` in UTC (a leap February has its 29th)."""
    match = _MONTH.match(month)
    if match is None:
        raise PeriodError(f"period {month!r}: expected a month as YYYY-MM")
    year, number = int(match.group(1)), int(match.group(2))
    start = datetime(year, number, 1, tzinfo=UTC)
    end = datetime(year + number // 12, number % 12 + 1, 1, tzinfo=UTC)
    return start, end


def month_of(start: datetime) -> str:
    return start.strftime("%Y-%m")


def state_of(end: datetime, now: datetime, *, closed: bool, grace: timedelta = DEFAULT_GRACE) -> PeriodState:
    if closed:
        return PeriodState.CLOSED
    if now < end:
        return PeriodState.OPEN
    return PeriodState.GRACE if now < end + grace else PeriodState.DUE


def _key(line: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(line[m] for m in KEY_MEMBERS)


def _text(value: Decimal) -> str:
    # Exponents of the texts subtracted are kept: a cost stays at its minor unit ("-0.40").
    return format(value, "f")


def correction_lines(
    booked: Iterable[Mapping[str, str]], current: Iterable[Mapping[str, str]]
) -> list[dict[str, str]]:
    """The non-zero differences between the month rated now (``current``) and what its invoice and
    earlier corrections booked (``booked``: the frozen lines, then every correction), as lines.

    A line that vanished (a late delete) is corrected by its negation; a new one (a late create) is
    booked whole. Each delta keeps its line's members (unit price, version...) of the current
    rating, or of the booked one when it vanished."""
    sums: dict[tuple[str, ...], dict[str, Decimal]] = {}
    shape: dict[tuple[str, ...], Mapping[str, str]] = {}
    for line in booked:
        key = _key(line)
        shape.setdefault(key, line)
        acc = sums.setdefault(key, dict.fromkeys(DELTA_MEMBERS, Decimal(0)))
        for m in DELTA_MEMBERS:
            acc[m] += Decimal(line[m])
    now: dict[tuple[str, ...], Mapping[str, str]] = {_key(line): line for line in current}
    out: list[dict[str, str]] = []
    for key in sorted(set(sums) | set(now)):
        fresh = now.get(key)
        was = sums.get(key, dict.fromkeys(DELTA_MEMBERS, Decimal(0)))
        deltas = {m: (Decimal(fresh[m]) if fresh is not None else Decimal(0)) - was[m] for m in DELTA_MEMBERS}
        if not any(deltas[m] for m in _MONEY_MEMBERS):
            continue
        out.append(
            {**(fresh if fresh is not None else shape[key]), **{m: _text(v) for m, v in deltas.items()}}
        )
    return out


def credits_and_debits(corrections: Sequence[Mapping[str, str]]) -> dict[str, Decimal]:
    """Per project, the sum of its correction lines' costs: negative a credit, positive a debit."""
    totals: dict[str, Decimal] = {}
    for line in corrections:
        totals[line["project_id"]] = totals.get(line["project_id"], Decimal(0)) + Decimal(line["cost"])
    return dict(sorted(totals.items()))
