"""Whether a string is a UUID: the ids of projects, relations, tokens, credentials and runs are."""

from __future__ import annotations

import uuid


def is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except (ValueError, TypeError, AttributeError):
        return False
    return True
