"""Instants: the one place times are parsed and formatted.

Every instant inside Tally is an aware ``datetime`` in UTC with microsecond
precision. Text crosses the boundary only through these functions, so the
event ids derived from a timestamp are the same whoever computes them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

ONE_MICROSECOND = timedelta(microseconds=1)


class InstantError(ValueError):
    """A text that is not an RFC 3339 / ISO 8601 instant with a zone."""


def parse_instant(text: str) -> datetime:
    """Parse an ISO 8601 instant that carries a zone (``Z`` or an offset) into UTC.

    A naive text is refused: an instant without a zone could be read two ways,
    and a billing record must not guess.
    """
    if not isinstance(text, str) or not text:
        raise InstantError(f"not an instant: {text!r}")
    candidate = text.strip()
    if candidate[-1:] in ("z", "Z"):
        candidate = candidate[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(candidate)
    except ValueError as exc:
        raise InstantError(f"not an instant: {text!r}") from exc
    if parsed.tzinfo is None:
        raise InstantError(f"instant without a zone: {text!r}")
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise InstantError(f"instant outside years 1-9999 once in UTC: {text!r}") from None


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
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += "." + f"{value.microsecond:06d}".rstrip("0")
    return text + "Z"


def utc_now() -> datetime:
    """The wall clock, in UTC."""
    return datetime.now(UTC)
