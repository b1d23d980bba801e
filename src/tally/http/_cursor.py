"""Opaque pagination cursors: the last sort key, tagged with its listing and sealed with an HMAC.

A cursor is ``base64url(JSON [listing, key...]) "." base64url(tag)``, the tag the
first 16 bytes of HMAC-SHA256 over the JSON under the deployment's cursor key.
It is the store's keyset position, so a page is stable under concurrent
inserts. A cursor that was edited (any character), that another deployment
issued, or that belongs to another listing is a 400 on ``query.cursor``: a
client cannot walk the store from a position it made up.

The key is the store's shared secret ``cursor-hmac`` (``Store.shared_secret``),
created on first use: every replica on one database seals and checks with the
same key, so a cursor from one replica works on the next. It is read once per
process and kept.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from datetime import datetime
from typing import Any

import orjson

from tally.core import InstantError, ResourceKey, format_instant, parse_instant
from tally.store import CredentialsRole

from ._problems import invalid

KEY_NAME = "cursor-hmac"
TAG_BYTES = 16
_PART = re.compile(r"[A-Za-z0-9_-]+")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    """The bytes of one unpadded part; only its canonical spelling is accepted (a character flipped in
    the unused low bits of the last one would otherwise decode to the same bytes)."""
    if not _PART.fullmatch(text):
        raise ValueError("not base64url")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64(data) != text:
        raise ValueError("not canonical base64url")
    return data


def _forged() -> Exception:
    return invalid("query.cursor", "not a cursor this API issued (cursors cannot be edited)")


class CursorSeal:
    """Encodes sort keys into sealed cursors and checks cursors back into sort keys, under one key."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def _tag(self, payload: bytes) -> bytes:
        return hmac.new(self._key, payload, hashlib.sha256).digest()[:TAG_BYTES]

    def _encode(self, kind: str, values: list[Any]) -> str:
        payload = orjson.dumps([kind, *values])
        return f"{_b64(payload)}.{_b64(self._tag(payload))}"

    def _decode(self, kind: str, cursor: str, arity: int) -> list[Any]:
        body, dot, tag = cursor.partition(".")
        try:
            payload, given = _unb64(body), _unb64(tag)
        except (binascii.Error, ValueError, UnicodeError):
            raise _forged() from None
        if not dot or not hmac.compare_digest(given, self._tag(payload)):
            raise _forged()
        decoded = orjson.loads(payload)
        if (
            not isinstance(decoded, list)
            or len(decoded) != arity + 1
            or decoded[0] != kind
            or not all(isinstance(v, str) for v in decoded[1:])
        ):
            raise invalid("query.cursor", f"not a cursor of this listing ({kind})")
        return decoded[1:]

    def encode_values(self, kind: str, values: list[str]) -> str:
        """A cursor of the listing ``kind`` over any sort key of strings."""
        return self._encode(kind, list(values))

    def decode_values(self, kind: str, cursor: str, arity: int) -> list[str]:
        return [str(v) for v in self._decode(kind, cursor, arity)]

    def encode_time_key(self, kind: str, key: tuple[datetime, str] | None) -> str | None:
        return None if key is None else self._encode(kind, [format_instant(key[0]), key[1]])

    def decode_time_key(self, kind: str, cursor: str | None) -> tuple[datetime, str] | None:
        if cursor is None:
            return None
        stamp, ident = self._decode(kind, cursor, 2)
        try:
            return (parse_instant(stamp), ident)
        except (InstantError, OverflowError):  # sealed by us, so only a key shared with a bad writer
            raise _forged() from None

    def encode_resource_key(self, key: ResourceKey | None) -> str | None:
        return (
            None
            if key is None
            else self._encode("resources", [key.cloud, key.resource_type, key.resource_id])
        )

    def decode_resource_key(self, cursor: str | None) -> ResourceKey | None:
        if cursor is None:
            return None
        cloud, rtype, rid = self._decode("resources", cursor, 3)
        return ResourceKey(cloud, rtype, rid)

    def encode_id_key(self, kind: str, key: str | None) -> str | None:
        return None if key is None else self._encode(kind, [key])

    def decode_id_key(self, kind: str, cursor: str | None) -> str | None:
        if cursor is None:
            return None
        return str(self._decode(kind, cursor, 1)[0])


class CursorKeyring:
    """The seal of this deployment, its key read from the store on first use and kept."""

    def __init__(self, store: CredentialsRole) -> None:
        self._store = store
        self._seal: CursorSeal | None = None

    async def seal(self) -> CursorSeal:
        if self._seal is None:
            # Two first requests at once may both read: they read the same row.
            self._seal = CursorSeal(await self._store.shared_secret(KEY_NAME))
        return self._seal
