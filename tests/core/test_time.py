"""Instants at the boundary: what Tally writes it reads back, and nothing finer or looser."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tally.core import INSTANT_EDGE_PATTERN, InstantError, format_instant, parse_instant

instants = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC))
offsets = st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)


@given(instants)
def test_every_instant_tally_writes_reads_back_the_same(instant: datetime) -> None:
    assert parse_instant(format_instant(instant)) == instant


@given(instants, offsets)
def test_an_offset_names_the_same_instant_in_utc(instant: datetime, zone: timezone) -> None:
    local = instant.astimezone(zone)
    text = local.isoformat(timespec="microseconds")
    assert parse_instant(text) == instant
    assert parse_instant(text).tzinfo is UTC


@given(instants, st.integers(min_value=1, max_value=999))
def test_a_fraction_finer_than_a_microsecond_is_never_truncated(instant: datetime, nanos: int) -> None:
    text = format_instant(instant.replace(microsecond=0))[:-1] + f".{instant.microsecond:06d}{nanos:03d}Z"
    with pytest.raises(InstantError, match="finer than a microsecond"):
        parse_instant(text)


def test_a_leap_second_is_refused_with_the_reason() -> None:
    with pytest.raises(InstantError, match=r"second must be in 0\.\.59"):
        parse_instant("2016-12-31T23:59:60Z")


@pytest.mark.parametrize(
    "text",
    [
        "0001-01-01T00:00:00+01:00",
        "0001-01-01T05:00:00+01:00",
        "9999-12-31T23:30:00-01:00",
        "9999-12-31t00:00:00-00:01",
    ],
)
def test_an_edge_day_with_an_offset_is_refused_naming_the_rule(text: str) -> None:
    with pytest.raises(InstantError, match="on 0001-01-01 and 9999-12-31 give the instant in UTC"):
        parse_instant(text)


@pytest.mark.parametrize(
    ("text", "utc"),
    [
        ("0001-01-01T00:00:00Z", datetime(1, 1, 1, tzinfo=UTC)),
        ("0001-01-01T00:00:00+00:00", datetime(1, 1, 1, tzinfo=UTC)),
        ("0001-01-01T00:00:00-01:00", datetime(1, 1, 1, 1, tzinfo=UTC)),
        ("9999-12-31T23:59:59.999999-00:00", datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
        ("9999-12-31T22:00:00+01:00", datetime(9999, 12, 31, 21, tzinfo=UTC)),
    ],
)
def test_an_edge_day_in_utc_or_toward_the_range_is_read(text: str, utc: datetime) -> None:
    assert parse_instant(text) == utc


@given(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)),
    st.sampled_from([datetime(1, 1, 1), datetime(9999, 12, 31)]),
    st.booleans(),
    st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59),
)
def test_the_documented_pattern_is_exactly_what_is_accepted(
    local: datetime, edge: datetime, on_edge: bool, minutes: int
) -> None:
    """The OpenAPI document states INSTANT_EDGE_PATTERN: an instant matches it iff the server reads it."""
    if on_edge:
        local = local.replace(year=edge.year, month=edge.month, day=edge.day)
    sign = "+" if minutes >= 0 else "-"
    text = local.isoformat() + f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    try:
        parse_instant(text)
        accepted = True
    except InstantError:
        accepted = False
    assert accepted is bool(re.match(INSTANT_EDGE_PATTERN, text))
