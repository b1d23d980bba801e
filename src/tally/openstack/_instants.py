"""Instants as the OpenStack APIs write them, read into aware UTC datetimes.

Nova writes ``...Z`` seconds, its usage fields and cinder a naive fraction,
octavia a naive second, keystone a fraction with ``Z``, some a space instead of
``T``. Every one of them means UTC, so a text without a zone is read as UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime


def parse_platform_instant(text: object) -> datetime | None:
    """The instant ``text`` names, or None for null, the empty string, or a text that is no instant."""
    # Fast path (a sync reads three instants of every listed resource): the layouts Python reads as they
    # are, nova's ``...Z`` among them, mean what they mean after the rewriting below; only the others
    # need it.
    if type(text) is str:
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            pass
        else:
            if parsed.tzinfo is UTC:
                return parsed
            if parsed.tzinfo is None:
                return parsed.replace(tzinfo=UTC)
            return parsed.astimezone(UTC)
    return _rewritten(text)


def _rewritten(text: object) -> datetime | None:
    """``parse_platform_instant`` for every layout: the text rewritten into one Python reads."""
    if not isinstance(text, str) or not text.strip():
        return None
    candidate = text.strip().replace(" ", "T", 1)
    if candidate[-1:] in ("z", "Z"):
        candidate = candidate[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(candidate)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)
