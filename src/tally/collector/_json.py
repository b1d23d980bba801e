"""JSON text of events and bodies: orjson where it can, the standard library where orjson refuses.

orjson refuses integers beyond 64 bits and ``Decimal``; a notification may carry
either, and the collector must never fail on a value it only passes along.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import orjson


def _default(value: object) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, default=_default, separators=(",", ":"), allow_nan=False).encode()


def loads(text: bytes | str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)
