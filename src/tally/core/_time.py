"""Instants: the one place times are parsed and formatted.

Every instant inside Tally is an aware ``datetime`` in UTC with microsecond
precision. Text crosses the boundary only through these functions, so the
event ids derived from a timestamp are the same whoever computes them.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

ONE_MICROSECOND = timedelta(microseconds=1)
# RFC 3339 date-time; "T" and "Z" may be lower case (section 5.6). The fraction keeps its dot.
_RFC3339 = re.compile(r"(\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", re.ASCII)
# On the first and last day of the range an offset may carry the instant out of it; rather than
# refuse only the instants that do, both days take UTC alone, a rule the OpenAPI document can state
# as a pattern (INSTANT_EDGE_PATTERN) so that what it promises is exactly what is accepted.
INSTANT_EDGE_PATTERN = r"^(?!0001-01-01[Tt].*\+(?!00:00$))(?!9999-12-31[Tt].*-(?!00:00$))"
_AT_THE_EDGE = re.compile(r"(0001-01-01[Tt].*\+(?!00:00$)|9999-12-31[Tt].*-(?!00:00$))", re.ASCII)
_RFC3339_NAIVE = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?", re.ASCII)


class InstantError(ValueError):
    """A text that is not an RFC 3339 instant with a zone."""


def parse_instant(text: str) -> datetime:
    """Parse an RFC 3339 instant that carries a zone (``Z`` or an offset) into UTC.

    Strictly RFC 3339 (section 5.6): the other ISO 8601 forms (week dates, basic format, reduced
    precision, a comma) are refused, and so is a naive text: an instant without a zone could be
    read two ways, and a billing record must not guess. A fraction finer than a microsecond is
    refused rather than truncated: two such instants would collapse into one.
    """
    if not isinstance(text, str):
        raise InstantError(f"not an instant: {text!r}")
    match = _RFC3339.fullmatch(text)
    if match is None:
        if _RFC3339_NAIVE.fullmatch(text):
            raise InstantError(f"instant without a zone: {text!r}")
        raise InstantError(f"not an instant: {text!r} (RFC 3339 with a zone, like 2026-03-01T10:00:00Z)")
    moment, fraction, zone = match.groups()
    if _AT_THE_EDGE.match(text):
        raise InstantError(
            f"instant outside years 1-9999 once in UTC, or at their edge with an offset: {text!r} "
            "(on 0001-01-01 and 9999-12-31 give the instant in UTC)"
        )
    if fraction is None:
        fraction = ""
    elif len(fraction) > 7:
        if fraction[7:].strip("0"):
            raise InstantError(f"instant finer than a microsecond: {text!r}")
        fraction = fraction[:7]
    try:
        parsed = datetime.fromisoformat(moment + fraction + ("+00:00" if zone in "Zz" else zone))
    except ValueError as exc:
        raise InstantError(f"not an instant: {text!r} ({exc})") from None
    return parsed.astimezone(UTC)


def as_utc(value: datetime) -> datetime:
    """Return ``value`` in UTC; a naive value is taken to be UTC already."""
    zone = value.tzinfo
    if zone is UTC:
        return value
    if zone is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def format_instant(value: datetime) -> str:
    """RFC 3339 in UTC with ``Z``; the fraction is written without trailing zeros.

    This is Go's RFC3339Nano layout, which the deterministic event id hashes, so
    ids computed here match the reference system's for the same instant.
    """
    value = as_utc(value)
    # isoformat, not strftime: %Y writes the year 999 as "999", which RFC 3339 (and Go) write "0999".
    text = value.isoformat(timespec="seconds")[:19]
    if value.microsecond:
        text += "." + f"{value.microsecond:06d}".rstrip("0")
    return text + "Z"


def utc_now() -> datetime:
    """The wall clock, in UTC."""
    return datetime.now(UTC)
