"""``/api/v1/events``: ingest (one object or an array, through the ingest pipeline) and the event listing."""

from __future__ import annotations

import json
from typing import Any

from tally.core import may_hold_wide_integer
from tally.ingest import BatchTooLarge
from tally.store import EventFilter

from ._auth import narrow
from ._contract import Call, Reply, Router, decode_json, is_blank
from ._json import NumbersChecked
from ._models import EventPage, EventsQuery, IngestAnswer
from ._problems import Problem, invalid

router = Router("events")

MAX_BATCH = 1000

# The body is checked item by item, not as a whole: an item that is no valid event (even one that is
# no object) is that item's rejection in a 200 answer, so the document promises no more than "an object
# or an array". The members an item must have are WireEvent's.
BATCH_SCHEMA: dict[str, Any] = {
    "description": (
        "One event object or an array of at most 1000 (more: 413). Each item is validated on its own "
        "against WireEvent: a refused item is reported in rejected[] with a reason naming the member, the "
        "others are stored."
    ),
    "oneOf": [
        {"type": "object", "description": "one event (see WireEvent)"},
        {"type": "array", "items": {"description": "an event (see WireEvent)"}},
    ],
}


def _decode_exact(raw: bytes) -> Any:
    """The body as JSON with every integer exact; the item check then refuses those past 64 bits."""
    data = decode_json(raw)
    # orjson reads an integer past 64 bits as a float (10**40 + 1 becomes 1e40): only a body that may
    # hold one is read again.
    if not may_hold_wide_integer(raw):
        return data
    # orjson has accepted the text, so the standard decoder reads the same values, integers exact.
    try:
        return json.loads(raw)
    except RecursionError:
        raise invalid("body", "is nested too deeply to read its long numbers exactly") from None


@router.route(
    "POST",
    "/api/v1/events",
    summary="Ingest events (ingest credential)",
    auth="ingest",
    raw_body_schema=BATCH_SCHEMA,
    replies=(Reply(200, "what was accepted, deduplicated and refused", IngestAnswer),),
)
async def post_events(call: Call) -> Any:
    data = None if is_blank(call.raw_body) else _decode_exact(call.raw_body)
    if isinstance(data, dict):
        items: list[Any] = [data]
    elif isinstance(data, list):
        items = data
    else:
        raise invalid("body", "must be an event object or an array of event objects")
    if len(items) > MAX_BATCH:
        raise Problem("payload_too_large", f"a batch holds at most {MAX_BATCH} events, this one {len(items)}")
    try:
        result = await call.services.pipeline.ingest(items, source="collector", scope=call.principal.scope)
    except BatchTooLarge as exc:
        raise Problem("payload_too_large", str(exc)) from None
    return result.to_json(), 200


@router.route(
    "GET",
    "/api/v1/events",
    summary="List events ordered by (timestamp, event_id)",
    auth="api",
    query=EventsQuery,
    replies=(Reply(200, "a page of events", EventPage),),
    lean=True,
)
async def list_events(call: Call) -> Any:
    q: EventsQuery = call.query
    cloud, project_id = narrow(call.principal, q.cloud, q.project_id)
    filters = EventFilter(
        cloud=cloud,
        platform=q.platform,
        project_id=project_id,
        resource_type=q.resource_type,
        event_type=q.event_type,
        source=q.source,
        start=q.from_,
        end=q.to,
        readable_by=call.principal.recalled,
    )
    seal = await call.services.cursors.seal()
    page = await call.services.store.list_events_json(
        filters, limit=q.limit, after=seal.decode_time_key("events", q.cursor)
    )
    answer = {"items": page.items, "next_cursor": seal.encode_time_key("events", page.next_key)}
    return NumbersChecked(answer) if page.numbers_plain else answer
