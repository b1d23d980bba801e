"""Instants at the boundary: what Tally writes it reads back, and nothing finer or looser."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tally.core import InstantError, format_instant, parse_instant

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
