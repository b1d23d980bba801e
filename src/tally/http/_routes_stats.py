"""``/api/v1/stats``: resource counts by group and event counts by time bucket and group."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from tally.core import format_instant
from tally.store import EventFilter, ResourceFilter

from ._auth import narrow
from ._contract import Call, Reply, Router
from ._inventory import resource_stats_at
from ._models import EventStatsQuery, ResourceStatsQuery, StatsAnswer
from ._problems import invalid

router = Router("stats")

# About 13 months: a wider window would be answered with tens of thousands of hourly buckets.
MAX_WINDOW = timedelta(days=397)


def _groups(base: tuple[str, ...], extra: list[str]) -> list[str]:
    return list(base) + [g for g in dict.fromkeys(extra) if g not in base]


def _json_row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (format_instant(v) if isinstance(v, datetime) else v) for k, v in row.items()}


@router.route(
    "GET",
    "/api/v1/stats/resources",
    summary="Resources counted by cloud, resource_type and the requested groups, now or at an instant",
    auth="api",
    query=ResourceStatsQuery,
    replies=(Reply(200, "one item per group with its count", StatsAnswer),),
)
async def resource_stats(call: Call) -> Any:
    q: ResourceStatsQuery = call.query
    cloud, project_id = narrow(call.principal, q.cloud, q.project_id)
    filters = ResourceFilter(
        cloud=cloud,
        platform=q.platform,
        project_id=project_id,
        resource_type=q.resource_type,
        state=q.state,
        status=q.status,
    )
    groups = _groups(("cloud", "resource_type"), list(q.group_by))
    if q.at is not None:
        rows = await resource_stats_at(call.services.store, groups, q.at, filters)
    else:
        rows = await call.services.store.resource_stats(groups, filters=filters)
    return {"items": [_json_row(r) for r in rows]}


@router.route(
    "GET",
    "/api/v1/stats/events",
    summary="Events counted per time bucket by cloud, event_type and the requested groups",
    auth="api",
    query=EventStatsQuery,
    replies=(Reply(200, "one item per bucket and group with its count", StatsAnswer),),
)
async def event_stats(call: Call) -> Any:
    q: EventStatsQuery = call.query
    if q.to <= q.from_:
        raise invalid("query.to", "must be later than from", status=422)
    if q.to - q.from_ > MAX_WINDOW:
        raise invalid("query.to", f"the window may span at most {MAX_WINDOW.days} days", status=422)
    cloud, project_id = narrow(call.principal, q.cloud, q.project_id)
    filters = EventFilter(
        cloud=cloud,
        platform=q.platform,
        project_id=project_id,
        resource_type=q.resource_type,
        event_type=q.event_type,
        source=q.source,
    )
    rows = await call.services.store.event_stats(
        _groups(("cloud", "event_type"), list(q.group_by)),
        start=q.from_,
        end=q.to,
        interval=q.interval,
        filters=filters,
    )
    return {"items": [_json_row(r) for r in rows]}
