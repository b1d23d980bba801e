"""The month arithmetic of partitions and retention (pure): names, bounds, what is made and retired."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from tally.store._partitions import add_months, month_of, month_start, months_to_make, partition_name
from tally.store._retention import months_to_retire, retention_boundary


def m(year: int, month: int) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


def test_a_month_is_the_utc_one() -> None:
    late_in_tokyo = datetime(2026, 3, 1, 5, 0, tzinfo=timezone(timedelta(hours=9)))  # 28 Feb in UTC
    assert month_start(late_in_tokyo) == m(2026, 2)
    assert add_months(m(2026, 11), 3) == m(2027, 2) and add_months(m(2026, 1), -1) == m(2025, 12)


def test_names_round_trip_and_other_tables_are_no_months() -> None:
    assert partition_name(m(2026, 7)) == "events_p202607" and month_of("events_p202607") == m(2026, 7)
    assert [month_of(n) for n in ("events_default", "events_p202613", "events_p2026071")] == [None] * 3


def test_the_current_month_and_the_ones_ahead_are_made() -> None:
    made = months_to_make(datetime(2026, 12, 31, 23, 59, tzinfo=UTC), 2)
    assert made == [m(2026, 12), m(2027, 1), m(2027, 2)]


def test_retention_keeps_the_current_month_and_n_before() -> None:
    boundary = retention_boundary(datetime(2026, 12, 15, tzinfo=UTC), 2)
    assert boundary == m(2026, 10)
    attached = {m(2026, n) for n in range(6, 13)} | {m(2027, 1)}
    assert months_to_retire(attached, boundary) == [m(2026, n) for n in range(6, 10)]


@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2200, 1, 1)), st.integers(1, 60))
def test_nothing_at_or_after_the_boundary_is_ever_retired(naive: datetime, months: int) -> None:
    now = naive.replace(tzinfo=UTC)
    boundary = retention_boundary(now, months)
    attached = {add_months(month_start(now), n) for n in range(-months - 3, 3)}
    retired = months_to_retire(attached, boundary)
    assert all(add_months(r, 1) <= boundary for r in retired)
    assert month_start(now) not in retired and len(retired) == 3
