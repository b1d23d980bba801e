"""Periods: months and their states, and correction lines as the non-zero differences."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from tally.rating import (
    PeriodError,
    PeriodState,
    correction_lines,
    credits_and_debits,
    month_bounds,
    state_of,
)

END = datetime(2026, 4, 1, tzinfo=UTC)


def line(rid: str, cost: str, consumed: str = "10", project: str = "p-1") -> dict[str, str]:
    return {
        "cloud": "c", "resource_type": "instance", "resource_id": rid, "project_id": project,
        "state": "active",
        "sku": "instance.vcpu_hour", "charge_start": "2026-03-01T00:00:00Z", "presence_s": "36000",
        "billed_s": "36000", "consumed_quantity": consumed, "pricing_quantity": consumed, "cost": cost,
        "unit_price": "0.01",
    }  # fmt: skip


def test_months_have_their_days_and_a_leap_february_its_29th() -> None:
    assert month_bounds("2028-02") == (datetime(2028, 2, 1, tzinfo=UTC), datetime(2028, 3, 1, tzinfo=UTC))
    start, end = month_bounds("2028-02")
    assert end - start == timedelta(days=29)
    assert month_bounds("2026-12")[1] == datetime(2027, 1, 1, tzinfo=UTC)
    with pytest.raises(PeriodError, match=r"^period '2026-13': expected a month as YYYY-MM$"):
        month_bounds("2026-13")


def test_a_month_is_open_then_in_grace_for_72_hours_then_due() -> None:
    assert state_of(END, END - timedelta(seconds=1), closed=False) is PeriodState.OPEN
    assert state_of(END, END, closed=False) is PeriodState.GRACE
    assert (
        state_of(END, END + timedelta(hours=72) - timedelta(microseconds=1), closed=False)
        is PeriodState.GRACE
    )
    assert state_of(END, END + timedelta(hours=72), closed=False) is PeriodState.DUE
    assert state_of(END, END + timedelta(hours=1), closed=False, grace=timedelta(0)) is PeriodState.DUE
    assert state_of(END, END, closed=True) is PeriodState.CLOSED


def test_corrections_are_the_non_zero_deltas_and_each_project_one_credit_or_debit() -> None:
    booked = [line("vm-1", "1.20", "120"), line("vm-2", "0.50", "50"), line("vm-3", "0.10", "10", "p-2")]
    # vm-1 was deleted late (less usage), vm-2 unchanged, vm-3 gone (a late delete before any use),
    # vm-4 created late.
    current = [line("vm-1", "0.80", "80"), line("vm-2", "0.50", "50"), line("vm-4", "0.30", "30", "p-2")]
    fixes = correction_lines(booked, current)
    assert [(f["resource_id"], f["consumed_quantity"], f["cost"]) for f in fixes] == [
        ("vm-1", "-40", "-0.40"),
        ("vm-3", "-10", "-0.10"),
        ("vm-4", "30", "0.30"),
    ]
    assert credits_and_debits(fixes) == {"p-1": Decimal("-0.40"), "p-2": Decimal("0.20")}
    # Booked plus the corrections is the month as rated now: a second pass finds nothing.
    assert correction_lines(booked + fixes, current) == []
