"""PostgreSQL array literals of a batch's columns: how the hot ingest path sends a batch in one statement.

The literals are built with str methods (C speed); psycopg's own list dumpers work element by element in
Python and cost more than the statement.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import orjson

from tally.core import Event, ResourceKey, ResourceRow


def json_param(value: Any) -> str:
    """A JSON value as text (cast to jsonb by the statement)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        # orjson refuses integers beyond 64 bits, which JSON allows.
        return json.dumps(value, separators=(",", ":"))


def text_array(values: Sequence[str | None]) -> str:
    """A PostgreSQL array literal of texts (NULL for None). A text can hold no NUL (events refuse it and
    PostgreSQL cannot store it), so NUL separates the elements while the escaping runs once over all."""
    if not values:
        return "{}"
    if None in values:
        return "{" + ",".join("NULL" if v is None else text_array([v])[1:-1] for v in values) + "}"
    body = "\x00".join(values)  # type: ignore[arg-type]
    if '"' in body or "\\" in body:
        body = body.replace("\\", "\\\\").replace('"', '\\"')
    return '{"' + body.replace("\x00", '","') + '"}'


def json_array(values: Sequence[Any]) -> str:
    """A PostgreSQL array literal of JSON texts. JSON text never holds a raw control character (both
    encoders escape them), so \\x01 can separate the elements while the escaping runs once over all."""
    if not values:
        return "{}"
    body = "\x01".join(json_param(v) for v in values)
    return '{"' + body.replace("\\", "\\\\").replace('"', '\\"').replace("\x01", '","') + '"}'


_INSTANT_CACHE_LIMIT = 16384
_instants: dict[datetime, str] = {}


def instant_text(value: datetime) -> str:
    """ISO 8601 text of an instant, remembered: isoformat costs about a microsecond and a batch's rows
    repeat the instants of its events, its received_at and earlier batches' creation instants. Equal
    aware datetimes are the same instant, so sharing their text is exact."""
    text = _instants.get(value)
    if text is None:
        text = value.isoformat()
        if len(_instants) >= _INSTANT_CACHE_LIMIT:
            _instants.clear()
        _instants[value] = text
    return text


def instant_array(values: Sequence[datetime | None]) -> str:
    """A PostgreSQL array literal of instants (ISO 8601 with offset; NULL for None)."""
    get = _instants.get
    return "{" + ",".join(["NULL" if v is None else (get(v) or instant_text(v)) for v in values]) + "}"


def event_columns(events: Sequence[Event]) -> list[str]:
    return [
        text_array([e.event_id for e in events]),
        instant_array([e.timestamp for e in events]),
        text_array([e.event_type for e in events]),
        text_array([e.platform for e in events]),
        text_array([e.cloud for e in events]),
        text_array([e.resource_type for e in events]),
        text_array([e.resource_id for e in events]),
        text_array([e.project_id for e in events]),
        text_array([e.source for e in events]),
        json_array([e.payload for e in events]),
    ]


def key_columns(keys: Sequence[ResourceKey]) -> list[str]:
    return [
        text_array([k.cloud for k in keys]),
        text_array([k.resource_type for k in keys]),
        text_array([k.resource_id for k in keys]),
    ]


def row_columns(rows: Sequence[ResourceRow]) -> list[str]:
    return [
        text_array([r.key.cloud for r in rows]),
        text_array([r.key.resource_type for r in rows]),
        text_array([r.key.resource_id for r in rows]),
        text_array([r.platform for r in rows]),
        text_array([r.project_id for r in rows]),
        text_array([r.state for r in rows]),
        json_array([r.size for r in rows]),
        instant_array([r.created_at for r in rows]),
        instant_array([r.deleted_at for r in rows]),
        text_array([r.last_event_type for r in rows]),
        instant_array([r.last_event_at for r in rows]),
        json_array([r.last_payload for r in rows]),
        instant_array([r.first_event_at for r in rows]),
        instant_array([r.last_received_at for r in rows]),
        text_array([r.last_event_id for r in rows]),
    ]
