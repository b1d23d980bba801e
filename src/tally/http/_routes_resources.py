"""``/api/v1/resources``: the projection listing, a resource's full history, and its lifecycle."""

from __future__ import annotations

from typing import Any

from tally.core import ResourceKey, ResourceRow, lifecycle
from tally.store import ResourceFilter

from ._auth import narrow
from ._contract import Call, Reply, Router
from ._json import NumbersChecked
from ._models import HistoryAnswer, LifecycleAnswer, ResourcePage, ResourcesQuery
from ._problems import Problem
from ._serialize import event_json, interval_json, resource_json

router = Router("resources")

MAX_HISTORY = 10_000
KEY_PATH = "/api/v1/resources/{cloud}/{resource_type}/{resource_id}"


@router.route(
    "GET",
    "/api/v1/resources",
    summary="List projection rows ordered by (cloud, resource_type, resource_id)",
    auth="api",
    query=ResourcesQuery,
    replies=(Reply(200, "a page of resources", ResourcePage),),
    lean=True,
)
async def list_resources(call: Call) -> Any:
    q: ResourcesQuery = call.query
    cloud, project_id = narrow(call.principal, q.cloud, q.project_id)
    filters = ResourceFilter(
        cloud=cloud,
        platform=q.platform,
        project_id=project_id,
        resource_type=q.resource_type,
        state=q.state,
        status=q.status,
        readable_by=call.principal.recalled,
    )
    seal = await call.services.cursors.seal()
    page = await call.services.store.list_resources_json(
        filters, limit=q.limit, after=seal.decode_resource_key(q.cursor)
    )
    answer = {"items": page.items, "next_cursor": seal.encode_resource_key(page.next_key)}
    return NumbersChecked(answer) if page.numbers_plain else answer


async def _visible_row(call: Call) -> tuple[ResourceKey, ResourceRow]:
    key = ResourceKey(call.path["cloud"], call.path["resource_type"], call.path["resource_id"])
    row = await call.services.store.get_resource(key)
    # A project token must not learn that another project's resource exists: same 404 as a missing one.
    if row is None or not call.principal.owns(key.cloud, row.project_id):
        raise Problem(
            "not_found", f"no resource {key.resource_type} {key.resource_id!r} in cloud {key.cloud!r}"
        )
    return key, row


@router.route(
    "GET",
    KEY_PATH + "/events",
    summary="A resource's full history in fold order (unpaginated; over 10,000 events: 422)",
    auth="api",
    replies=(Reply(200, "every event of the resource", HistoryAnswer),),
)
async def resource_events(call: Call) -> Any:
    key, _ = await _visible_row(call)
    events = await call.services.store.resource_history(key, limit=MAX_HISTORY + 1)
    if len(events) > MAX_HISTORY:
        raise Problem(
            "history_too_long",
            f"the resource has more than {MAX_HISTORY} events; read them with GET /api/v1/events and filters",
        )
    return {"items": [event_json(e) for e in events]}


@router.route(
    "GET",
    KEY_PATH + "/lifecycle",
    summary="A resource's lifecycle: intervals of constant state, size and project",
    auth="api",
    replies=(Reply(200, "the row, its events, the intervals and the fold's warnings", LifecycleAnswer),),
)
async def resource_lifecycle(call: Call) -> Any:
    key, row = await _visible_row(call)
    events = await call.services.store.resource_history(key, limit=MAX_HISTORY + 1)
    if len(events) > MAX_HISTORY:
        raise Problem("history_too_long", f"the resource has more than {MAX_HISTORY} events")
    folded = lifecycle(events)
    return {
        "resource": resource_json(row),
        "events": [event_json(e) for e in events],
        "intervals": [interval_json(i) for i in folded.intervals],
        "warnings": list(folded.warnings),
    }
