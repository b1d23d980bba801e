"""Reading one AMQP body into an ``OsloNotification``: envelope, timestamp, exact numbers. Pure.

oslo.messaging sends two shapes. ``messagingv2`` wraps the message in
``{"oslo.version": "2.0", "oslo.message": "<JSON string>"}`` whose inner
document must be decoded a second time; ``messaging`` (1.0) sends the inner
dict bare. Both are read here, and every failure becomes an ``Unparseable``
value with a fixed reason word (a bounded metric label) and a detail naming
what was wrong: a body the collector cannot read must be acked and counted,
never raised into the consumer loop.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import orjson

from ._outcome import Decoded, DecodeOutcome, OsloNotification, Skipped, Unparseable

MAX_BODY_BYTES = 1024 * 1024

# oslo writes str(datetime): a space separator, no zone, the fraction dropped when it is zero.
_OSLO_LAYOUT = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{6})?$")
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


# Floats become Decimal so that a quantity like 0.1 GiB is carried as written. One decoder for all:
# json.loads with a hook would build a new one per call, a measurable share of the hot path.
_DECODER = json.JSONDecoder(parse_float=Decimal)


def _loads(text: str) -> Any:
    return _DECODER.decode(text)


def _outer(text: str) -> Any:
    """The body's top level. A 2.0 envelope holds only strings, so orjson (several times faster)
    reads it exactly; a 1.0 message, or anything orjson refuses, is read by the exact decoder."""
    try:
        outer = orjson.loads(text)
    except orjson.JSONDecodeError:
        return _loads(text)
    if isinstance(outer, dict) and ("oslo.message" in outer or "oslo.version" in outer):
        return outer
    return _loads(text)


def _inner(text: str) -> Any:
    """The oslo message. orjson reads it (the exact decoder took a sixth of the collector's CPU),
    unless the payload carries a float among its own members, the only numbers a mapping reads (the
    sizes): then the exact decoder reads it again, so that a quantity keeps the digits it was
    written with. Nested floats reach no event. Anything orjson refuses (integers beyond 64 bits,
    NaN) goes to the exact decoder, whose error is the one reported."""
    try:
        inner = orjson.loads(text)
    except orjson.JSONDecodeError:
        return _loads(text)
    payload = inner.get("payload") if isinstance(inner, dict) else None
    if isinstance(payload, dict) and any(type(value) is float for value in payload.values()):
        return _loads(text)
    return inner


def parse_oslo_timestamp(value: object) -> datetime | None:
    """The instant of a notification, in UTC; ``None`` when no accepted layout matches.

    Layouts tried in order: ``YYYY-MM-DD HH:MM:SS.ffffff``, ``YYYY-MM-DD HH:MM:SS``
    (both naive, read as UTC, as oslo stamps ``utcnow()``), then RFC 3339.
    """
    if not isinstance(value, str):
        return None
    try:
        if _OSLO_LAYOUT.match(value):
            return datetime.fromisoformat(value).replace(tzinfo=UTC)
        if _RFC3339.match(value):
            text = value[:-1] + "+00:00" if value[-1] in "zZ" else value
            return datetime.fromisoformat(text.replace("t", "T")).astimezone(UTC)
    except ValueError:
        return None
    return None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _unwrap(body: bytes | str | Mapping[str, Any]) -> dict[str, Any] | Unparseable:
    if isinstance(body, bytes | bytearray | memoryview):
        raw = bytes(body)
        if len(raw) > MAX_BODY_BYTES:
            return Unparseable("oversized", f"body of {len(raw)} bytes is over {MAX_BODY_BYTES}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return Unparseable("encoding", f"body is not UTF-8: {exc.reason} at byte {exc.start}")
        try:
            outer: Any = _outer(text)
        except ValueError as exc:
            return Unparseable("json", f"body is not JSON: {exc}")
    elif isinstance(body, str):
        # A character is at most 4 bytes of UTF-8: only long texts need the encoding to be measured.
        if len(body) > MAX_BODY_BYTES // 4 and (size := len(body.encode())) > MAX_BODY_BYTES:
            return Unparseable("oversized", f"body of {size} bytes is over {MAX_BODY_BYTES}")
        try:
            outer = _outer(body)
        except ValueError as exc:
            return Unparseable("json", f"body is not JSON: {exc}")
    else:
        outer = body
    if not isinstance(outer, Mapping):
        return Unparseable("envelope", f"body is a JSON {type(outer).__name__}, not an object")
    message: dict[str, Any] = outer if isinstance(outer, dict) else dict(outer)
    if "oslo.message" not in message and "oslo.version" not in message:
        return message  # 1.0 format: the message itself
    inner_text = message.get("oslo.message")
    if not isinstance(inner_text, str):
        return Unparseable("envelope", "oslo.message is missing or not a JSON string")
    try:
        inner = _inner(inner_text)
    except ValueError as exc:
        return Unparseable("json", f"oslo.message is not JSON: {exc}")
    if not isinstance(inner, dict):
        return Unparseable("envelope", f"oslo.message is a JSON {type(inner).__name__}, not an object")
    return inner


def decode_body(body: bytes | str | Mapping[str, Any]) -> DecodeOutcome:
    """Read one body; the outcome is a value, never an exception."""
    try:
        message = _unwrap(body)
    except RecursionError:
        return Unparseable("json", "body nests too deeply")
    if isinstance(message, Unparseable):
        return message
    message_id = _text(message.get("message_id"))
    event_type = message.get("event_type")
    if not isinstance(event_type, str) or not event_type:
        return Unparseable("event_type", "event_type is missing or not a string", message_id)
    stamp = message.get("timestamp")
    timestamp = parse_oslo_timestamp(stamp)
    if timestamp is None:
        if stamp is None:
            return Unparseable("timestamp", "timestamp is missing", message_id)
        return Unparseable(
            "timestamp", f"timestamp {str(stamp)[:64]!r} matches no accepted layout", message_id
        )
    payload = message.get("payload")
    if isinstance(payload, dict) and "nova_object.data" in payload:
        return Skipped("versioned", event_type, message_id)
    return Decoded(
        OsloNotification(
            message_id=message_id,
            event_type=event_type,
            timestamp=timestamp,
            payload=payload,
            context_owner=context_owner(message),
        )
    )


_CONTEXT_OWNER_KEYS = ("project_id", "tenant_id", "project", "tenant")


def context_owner(message: Mapping[str, Any]) -> str:
    """The project of the request context: the flattened ``_context_<key>`` members oslo writes
    (``project_id``, ``tenant_id``, and older releases' ``project`` / ``tenant``), else the same
    keys of a context sent as a plain dict (``context`` or ``_context``); "" when none names it."""
    for key in _CONTEXT_OWNER_KEYS:
        value = _text(message.get(f"_context_{key}"))
        if value:
            return value
    for name in ("_context", "context"):
        nested = message.get(name)
        if isinstance(nested, dict):
            for key in _CONTEXT_OWNER_KEYS:
                value = _text(nested.get(key))
                if value:
                    return value
    return ""
