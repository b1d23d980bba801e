"""The canonical event: ten members, their limits, and the category of a type.

``parse_event`` is the one validation of the wire object. Its refusal reasons
start with ``schema:`` and name the member, because the Reporting API hands the
reason to the client and dead-letters the item with it.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from ._time import InstantError, format_instant, parse_instant

EVENT_TYPE_PATTERN = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+)+")
# Integers are kept exact only inside the signed 64-bit range (jsonb, SQLite and orjson agree on it).
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# An integer outside that range takes at least 19 digits in JSON text; a translate and a substring
# search find such a run several times faster than a regular expression.
_DIGIT_MASK = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
WIDE_INTEGER_DIGITS = 19
MAX_EVENT_ID = 256
MAX_EVENT_TYPE = 512
MAX_TEXT = 512
RESERVED_PLATFORMS = frozenset({"meta", "partner"})
SOURCES = frozenset({"collector", "reconciliation"})
# Retention writes snapshot events of these types itself (``_fold.SNAPSHOT_TYPES``); the folds read a
# stored event of one as a snapshot, so nothing posted may carry one.
RESERVED_TYPE_PREFIX = "tally.retention."
MEMBERS = (
    "event_id",
    "timestamp",
    "event_type",
    "platform",
    "cloud",
    "resource_type",
    "resource_id",
    "project_id",
    "source",
    "payload",
)
_MEMBER_SET = frozenset(MEMBERS)
_TEXT_MEMBERS = ("platform", "cloud", "resource_type", "resource_id", "project_id")
_CATEGORY_CACHE_LIMIT = 4096


class EventInvalid(ValueError):
    """A wire object that is not a canonical event; ``reason`` names the member."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Category(enum.Enum):
    """What an event does to a resource's lifecycle, read from its type alone."""

    CREATE = "create"  # opens the resource: needs state and size
    UPDATE = "update"  # changes state, size or owner of a live resource
    DELETE = "delete"  # ends the resource: terminal until an explicit create


_categories: dict[str, Category] = {}


def category_of(event_type: str) -> Category:
    """Any dot-separated part equal to ``create`` wins, then ``delete``, else update."""
    # Remembered: a cloud has a few dozen event types and every fold asks for each event's category.
    known = _categories.get(event_type)
    if known is not None:
        return known
    parts = event_type.split(".")
    if "create" in parts:
        category = Category.CREATE
    elif "delete" in parts:
        category = Category.DELETE
    else:
        category = Category.UPDATE
    if len(_categories) < _CATEGORY_CACHE_LIMIT:
        _categories[event_type] = category
    return category


@dataclass(frozen=True, slots=True)
class ResourceKey:
    """A resource's identity; the type is part of it (a volume and an instance may share an id)."""

    cloud: str
    resource_type: str
    resource_id: str


@dataclass(frozen=True, slots=True)
class Event:
    """One fact about one resource at one instant.

    Invariant: ``timestamp`` is aware and in UTC; ``payload`` holds only JSON values.
    """

    event_id: str
    timestamp: datetime
    event_type: str
    platform: str
    cloud: str
    resource_type: str
    resource_id: str
    project_id: str
    source: str = "collector"
    payload: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> ResourceKey:
        return ResourceKey(self.cloud, self.resource_type, self.resource_id)

    @property
    def category(self) -> Category:
        return category_of(self.event_type)

    @property
    def state(self) -> str | None:
        value = self.payload.get("state")
        return value if isinstance(value, str) else None

    @property
    def size(self) -> Mapping[str, Any] | None:
        value = self.payload.get("size")
        # The exact-type test first: the ABC check is slow and the fold asks this for every event.
        return value if type(value) is dict or isinstance(value, Mapping) else None

    def to_wire(self) -> dict[str, Any]:
        """The JSON object of this event, as the API answers and accepts it."""
        return {
            "event_id": self.event_id,
            "timestamp": format_instant(self.timestamp),
            "event_type": self.event_type,
            "platform": self.platform,
            "cloud": self.cloud,
            "resource_type": self.resource_type,
            "resource_id": self.resource_id,
            "project_id": self.project_id,
            "source": self.source,
            "payload": dict(self.payload),
        }


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as the store holds it: with the instant it was received."""

    event: Event
    received_at: datetime

    def to_wire(self) -> dict[str, Any]:
        wire = self.event.to_wire()
        wire["received_at"] = format_instant(self.received_at)
        return wire


def has_digit_run(text: bytes, length: int) -> bool:
    """Whether ``text`` holds ``length`` ASCII digits in a row."""
    return b"0" * length in text.translate(_DIGIT_MASK)


def may_hold_wide_integer(text: bytes) -> bool:
    """Whether JSON ``text`` may hold an integer outside the signed 64-bit range (a run of 19 digits)."""
    return has_digit_run(text, WIDE_INTEGER_DIGITS)


def _content_problem(raw: Mapping[str, Any]) -> str | None:
    """A NUL anywhere, or an integer outside the signed 64-bit range, as the refusal's reason."""
    # Fast path (ingest is hot): JSON text writes a NUL, in a key or a value, as \u0000, and an integer
    # outside the range in 19 digits or more, so when neither is in the text there is none; when one is
    # (a string may hold either too) or when the value is not plain JSON (orjson refuses it, and every
    # integer past 64 bits), walk the value to be exact.
    if type(raw) is dict:
        try:
            text = orjson.dumps(raw)
        except TypeError:
            pass
        else:
            if b"\\u0000" not in text and not may_hold_wide_integer(text):
                return None
    if _walk_for_nul(raw):
        return "schema: the event contains a NUL character"
    member = _wide_integer(raw, "")
    if member is not None:
        return f"schema: {member} is an integer outside the signed 64-bit range"
    return None


def _walk_for_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(_walk_for_nul(k) or _walk_for_nul(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_walk_for_nul(v) for v in value)
    return False


def _wide_integer(value: Any, path: str) -> str | None:
    """The path of the first integer outside the signed 64-bit range, or None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return path if not INT64_MIN <= value <= INT64_MAX else None
    if isinstance(value, Mapping):
        for key, inner in value.items():
            found = _wide_integer(inner, f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for index, inner in enumerate(value):
            found = _wide_integer(inner, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def _text(raw: Mapping[str, Any], member: str, limit: int) -> str:
    value = raw.get(member)
    if value is None:
        raise EventInvalid(f"schema: {member} is required")
    if not isinstance(value, str):
        raise EventInvalid(f"schema: {member} must be a string")
    if not value:
        raise EventInvalid(f"schema: {member} must not be empty")
    if len(value) > limit:
        raise EventInvalid(f"schema: {member} is longer than {limit} characters")
    return value


def parse_event(raw: object, *, source: str | None = None) -> Event:
    """Validate one wire object into an ``Event``.

    ``source`` is what the ingesting pipeline stamps; when given it overwrites the
    member (anything posted to the events route is stored as ``collector``), but
    a value outside the known sources still refuses the item.
    """
    # Exact-type tests before the ABC checks throughout: those are slow and this runs for every event.
    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise EventInvalid("schema: an event must be a JSON object")
    problem = _content_problem(raw)
    if problem is not None:
        raise EventInvalid(problem)
    if not _MEMBER_SET.issuperset(raw):
        unknown = sorted(set(raw) - _MEMBER_SET)
        raise EventInvalid(f"schema: unknown member {unknown[0]}")
    event_id = raw.get("event_id")
    if type(event_id) is not str or not event_id or len(event_id) > MAX_EVENT_ID:
        event_id = _text(raw, "event_id", MAX_EVENT_ID)
    event_type = raw.get("event_type")
    if type(event_type) is not str or not event_type or len(event_type) > MAX_EVENT_TYPE:
        event_type = _text(raw, "event_type", MAX_EVENT_TYPE)
    if not EVENT_TYPE_PATTERN.fullmatch(event_type):
        raise EventInvalid(
            f"schema: event_type {event_type!r} does not match {EVENT_TYPE_PATTERN.pattern} in full"
        )
    if event_type.startswith(RESERVED_TYPE_PREFIX):
        raise EventInvalid(
            f"schema: event_type {event_type!r} is reserved: {RESERVED_TYPE_PREFIX}* are the store's own"
        )
    texts: dict[str, str] = {}
    for member in _TEXT_MEMBERS:
        value = raw.get(member)
        # The common case inline; anything else goes through _text, which names the problem.
        texts[member] = (
            value if type(value) is str and value and len(value) <= MAX_TEXT else _text(raw, member, MAX_TEXT)
        )
    for member in ("platform", "cloud"):
        if texts[member] in RESERVED_PLATFORMS:
            raise EventInvalid(f"schema: {member} {texts[member]!r} is reserved for virtual projects")
    stamp = raw.get("timestamp")
    if not isinstance(stamp, str):
        raise EventInvalid("schema: timestamp is required as an ISO 8601 string with a zone")
    try:
        timestamp = parse_instant(stamp)
    except InstantError as exc:
        raise EventInvalid(f"schema: timestamp {exc}") from exc
    given_source = raw.get("source", "collector")
    if not isinstance(given_source, str) or given_source not in SOURCES:
        raise EventInvalid(f"schema: source must be one of {sorted(SOURCES)}")
    payload = raw.get("payload", {})
    if payload is None:
        payload = {}
    if type(payload) is not dict and not isinstance(payload, Mapping):
        raise EventInvalid("schema: payload must be an object")
    category = category_of(event_type)
    state = payload.get("state")
    if state is not None:
        if not isinstance(state, str):
            raise EventInvalid("schema: payload.state must be a string")
        if len(state) > MAX_TEXT:
            raise EventInvalid(f"schema: payload.state is longer than {MAX_TEXT} characters")
    size = payload.get("size")
    if size is not None and type(size) is not dict and not isinstance(size, Mapping):
        raise EventInvalid("schema: payload.size must be an object")
    provider = payload.get("provider")
    if provider is not None and type(provider) is not dict and not isinstance(provider, Mapping):
        raise EventInvalid("schema: payload.provider must be an object")
    if category is not Category.DELETE and not state:
        raise EventInvalid(f"schema: payload.state is required on {category.value}")
    if category is Category.CREATE and size is None:
        raise EventInvalid("schema: payload.size is required on create")
    return Event(
        event_id=event_id,
        timestamp=timestamp,
        event_type=event_type,
        source=source if source is not None else str(given_source),
        payload=dict(payload),
        **texts,
    )
