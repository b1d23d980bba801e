"""Opaque pagination cursors: base64 of the last sort key, tagged with the listing it belongs to.

Clients must treat a cursor as opaque; it is the store's keyset position, so a
page is stable under concurrent inserts. A cursor from another listing, or one
that was tampered with, is a 400 on ``query.cursor``.
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Any

import orjson

from tally.core import InstantError, ResourceKey, format_instant, parse_instant

from ._problems import invalid


def _encode(kind: str, values: list[Any]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps([kind, *values])).decode("ascii")


def _decode(kind: str, cursor: str, arity: int) -> list[Any]:
    try:
        decoded = orjson.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
    except (binascii.Error, ValueError, UnicodeError):
        raise invalid("query.cursor", "not a cursor this API issued") from None
    if (
        not isinstance(decoded, list)
        or len(decoded) != arity + 1
        or decoded[0] != kind
        or not all(isinstance(v, str) for v in decoded[1:])
    ):
        raise invalid("query.cursor", f"not a cursor of this listing ({kind})")
    return decoded[1:]


def _instant(value: str) -> datetime:
    try:
        return parse_instant(value)
    except (InstantError, OverflowError):
        raise invalid("query.cursor", "not a cursor this API issued") from None


def encode_time_key(kind: str, key: tuple[datetime, str] | None) -> str | None:
    return None if key is None else _encode(kind, [format_instant(key[0]), key[1]])


def decode_time_key(kind: str, cursor: str | None) -> tuple[datetime, str] | None:
    if cursor is None:
        return None
    stamp, ident = _decode(kind, cursor, 2)
    return (_instant(stamp), ident)


def encode_resource_key(key: ResourceKey | None) -> str | None:
    return None if key is None else _encode("resources", [key.cloud, key.resource_type, key.resource_id])


def decode_resource_key(cursor: str | None) -> ResourceKey | None:
    if cursor is None:
        return None
    cloud, rtype, rid = _decode("resources", cursor, 3)
    return ResourceKey(cloud, rtype, rid)


def encode_id_key(kind: str, key: str | None) -> str | None:
    return None if key is None else _encode(kind, [key])


def decode_id_key(kind: str, cursor: str | None) -> str | None:
    if cursor is None:
        return None
    return str(_decode(kind, cursor, 1)[0])
