"""``/api/v1/usage``: metered usage per resource or group in ``[from, to)``, as JSON pages or streamed CSV.

The numbers come from ``tally.usage`` (the lifecycle fold clipped to the window). JSON pages follow
the API's cursors; ``Accept: text/csv`` streams the whole export, one page of resources at a time,
so a month of a large cloud is answered in bounded memory. A project token sees its own projects;
a keystone token reading a domain's projects gets one subtotal per project when it groups by project.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import replace
from datetime import datetime
from typing import Any, Literal

from pydantic import Field
from quart import Response, request

from tally.core import UsageWindow, format_instant, utc_now
from tally.usage import (
    UsageQuery,
    UsageRow,
    WindowError,
    check_window,
    csv_header,
    csv_rows,
    csv_text,
    group_rows,
    quantity_members,
    resource_page,
    resource_pages,
    row_json,
    rows_after,
)

from ._auth import narrow
from ._contract import Call, Instant, Model, Reply, Router
from ._cursor import CursorSeal
from ._models import Answer, Text, cursor_of
from ._problems import Problem, invalid

log = logging.getLogger(__name__)

router = Router("usage")

CSV = "text/csv"
JSON = "application/json"
# The whole export streamed (RFC 4180, CRLF): a header naming the columns, then one line per resource
# (or group) and state, in the order of the JSON pages; docs/reporting-api.md "Billing from Tally".
CSV_SCHEMA = {
    "type": "string",
    "description": "a header line (the line's members, state, presence_s, one <member>_s column per "
    "numeric size member, creates, deletes, received_at), then one line per resource or group and state",
}
UsageGroup = Literal["cloud", "resource_type", "project_id", "flavor", "volume_type"]


class UsageParams(Model):
    from_: Instant = Field(alias="from", description="inclusive start (RFC 3339 with a zone)")
    to: Instant = Field(description="exclusive end (RFC 3339 with a zone)")
    as_of: Instant | None = Field(default=None, description="count only events received before this")
    cloud: str | None = Text
    platform: str | None = Text
    project_id: str | None = Text
    resource_type: str | None = Text
    group_by: list[UsageGroup] = Field(default_factory=list, max_length=5)
    limit: int = Field(default=100, ge=1, le=1000, description="resources (or groups) per page")
    cursor: str | None = cursor_of("usage")


class UsageItem(Answer):
    state: str
    presence_s: str
    quantities_s: dict[str, str]
    creates: int
    deletes: int
    received_at: str | None


class UsagePage(Answer):
    from_: str = Field(alias="from")
    to: str
    as_of: str | None
    group_by: list[str]
    items: list[UsageItem]
    next_cursor: str | None


def checked_window(start: datetime, end: datetime) -> None:
    """The window check of every usage answer, as a problem naming ``query.to``."""
    try:
        check_window(start, end)
    except WindowError as exc:
        # A rule between two members, which the OpenAPI document cannot state: 422 (docs/reporting-api.md).
        raise invalid(f"query.{exc.parameter}", str(exc), status=422) from None


def _several(call: Call) -> tuple[str, ...]:
    """The projects of a keystone token reading several (a domain's) when the query names none: its
    usage is then read per project, each line a project's subtotal (``group_by`` must hold project_id)."""
    q: UsageParams = call.query
    view = call.principal.view
    if view is None or view.projects is None or len(view.projects) < 2 or q.project_id is not None:
        return ()
    if "project_id" not in q.group_by:
        raise Problem(
            "forbidden", "this token has several projects: name one with project_id, or group_by=project_id"
        )
    return tuple(sorted(view.projects))


async def _group_rows(call: Call, query: UsageQuery, several: tuple[str, ...]) -> list[UsageRow]:
    store = call.services.store
    if not several:
        return await group_rows(store, query)
    rows = [row for pid in several for row in await group_rows(store, replace(query, project_id=pid))]
    return sorted(rows, key=lambda r: (*("" if v is None else v for v in r.values), r.state))


def _query(call: Call, several: tuple[str, ...] = ()) -> UsageQuery:
    q: UsageParams = call.query
    checked_window(q.from_, q.to)
    cloud, project_id = narrow(call.principal, q.cloud, several[0] if several else q.project_id)
    now = utc_now()
    upto = now if q.as_of is None else min(now, q.as_of)
    return UsageQuery(
        window=UsageWindow(q.from_, q.to, upto, q.as_of),
        cloud=cloud,
        platform=q.platform,
        project_id=project_id,
        resource_type=q.resource_type,
        group_by=tuple(dict.fromkeys(q.group_by)),
    )


def wants_csv() -> bool:
    accept = request.accept_mimetypes
    if not accept:
        return False
    best = accept.best_match([JSON, CSV])
    if best is None:
        raise Problem(
            "not_acceptable", f"this route answers {JSON} or {CSV}, not {request.headers.get('Accept')!r}"
        )
    return best == CSV


def _group_cursor(seal: CursorSeal, row: UsageRow) -> str:
    return seal.encode_values("usage-groups", [*("" if v is None else v for v in row.values), row.state])


@router.route(
    "GET",
    "/api/v1/usage",
    summary="Usage in [from, to) per resource (or group) and state: presence and quantity-seconds "
    "(JSON pages, or the whole export as CSV with Accept: text/csv)",
    auth="api",
    query=UsageParams,
    replies=(Reply(200, "a page of usage lines (or text/csv)", UsagePage, other_media=((CSV, CSV_SCHEMA),)),),
)
async def usage(call: Call) -> Any:
    several = _several(call)
    query = _query(call, several)
    as_csv = wants_csv()
    q: UsageParams = call.query
    store = call.services.store
    if as_csv:
        members = quantity_members(await store.list_resource_types(), query.resource_type)
        response = Response(
            _stream_csv(call, query, members, several), content_type="text/csv; charset=utf-8"
        )
        # Quart cuts a body still streaming after RESPONSE_TIMEOUT (60 s); a large cloud's month may
        # take longer on a loaded host, and every line of it is being sent as it is computed.
        response.timeout = None
        return response
    columns = query.columns
    seal = await call.services.cursors.seal()
    if query.group_by:
        arity = len(columns) + 1
        after = None if q.cursor is None else tuple(seal.decode_values("usage-groups", q.cursor, arity))
        rows = rows_after(await _group_rows(call, query, several), after)
        page, more = rows[: q.limit], len(rows) > q.limit
        next_cursor = _group_cursor(seal, page[-1]) if more else None
    else:
        page, next_key, _ = await resource_page(
            store, query, limit=q.limit, after=seal.decode_resource_key(q.cursor)
        )
        next_cursor = seal.encode_resource_key(next_key)
    w = query.window
    return {
        "from": format_instant(w.start),
        "to": format_instant(w.end),
        "as_of": format_instant(w.as_of) if w.as_of is not None else None,
        "group_by": list(query.group_by),
        "items": [row_json(columns, r) for r in page],
        "next_cursor": next_cursor,
    }


async def _stream_csv(
    call: Call, query: UsageQuery, members: list[str], several: tuple[str, ...]
) -> AsyncIterator[bytes]:
    store = call.services.store
    yield csv_text([csv_header(query.columns, members)]).encode()
    try:
        if query.group_by:
            yield csv_rows(await _group_rows(call, query, several), members).encode()
            return
        # Closed here, not when collected: the stream holds a pooled connection and its transaction,
        # and a client that goes away midway must give them back at once.
        async with aclosing(resource_pages(store, query)) as pages:
            async for rows in pages:
                yield csv_rows(rows, members).encode()
    except Exception:
        # The status line is out: raising aborts the transfer, so the client sees a broken body rather
        # than a short export that looks whole.
        log.exception("usage CSV export failed midway")
        raise
