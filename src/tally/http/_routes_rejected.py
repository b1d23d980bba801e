"""``/api/v1/rejected-events``: the dead letters of ingest (admin), by the instant they were received."""

from __future__ import annotations

from typing import Any

from ._contract import Call, Reply, Router
from ._models import RejectedPage, RejectedQuery
from ._serialize import rejected_json

router = Router("rejected-events")


@router.route(
    "GET",
    "/api/v1/rejected-events",
    summary="Refused ingest items with their reasons, ordered by received_at (admin)",
    auth="admin",
    query=RejectedQuery,
    replies=(Reply(200, "a page of dead letters", RejectedPage),),
)
async def list_rejected(call: Call) -> Any:
    q: RejectedQuery = call.query
    seal = await call.services.cursors.seal()
    page = await call.services.store.list_rejected(
        start=q.from_, end=q.to, limit=q.limit, after=seal.decode_time_key("rejected", q.cursor)
    )
    return {
        "items": [rejected_json(r) for r in page.items],
        "next_cursor": seal.encode_time_key("rejected", page.next_key),
    }
