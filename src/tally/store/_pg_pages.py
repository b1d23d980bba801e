"""PostgreSQL's listing pages as the API's JSON objects, built straight from the rows.

Through ``StoredEvent`` and ``ResourceRow`` a page of 100 cost the API about 2 ms of Python: a frozen
dataclass per row, then a dict per row and ``format_instant`` for each of its instants. Here PostgreSQL
writes each instant as ``format_instant`` does (RFC 3339 in UTC with ``Z``, the fraction without
trailing zeros, none when it is zero) and each row becomes its object in one dict display; the objects
equal ``to_wire`` of the same rows (tests/store/test_pg_pages.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tally.core import ResourceKey, parse_instant

from ._interface import EventKey, Page


def instant_sql(column: str) -> str:
    """SQL writing timestamptz ``column`` as ``format_instant`` writes it (NULL stays NULL)."""
    return (
        f"rtrim(rtrim(to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US'), '0'), '.') || 'Z'"
    )


EVENT_JSON_SELECT = ", ".join(
    [
        "event_id",
        instant_sql("timestamp"),
        instant_sql("received_at"),
        "event_type, platform, cloud, resource_type, resource_id, project_id, source, payload",
    ]
)
ROW_JSON_SELECT = ", ".join(
    [
        "cloud, resource_type, resource_id, platform, project_id, state, size",
        instant_sql("created_at"),
        instant_sql("deleted_at"),
        "last_event_type",
        instant_sql("last_event_at"),
        "last_payload",
        instant_sql("first_event_at"),
    ]
)


def events_json_page(recs: Sequence[Sequence[Any]], limit: int) -> Page[dict[str, Any], EventKey]:
    """The page of ``limit`` events from the rows of ``EVENT_JSON_SELECT`` (one more: a next page)."""
    items = [
        {
            "event_id": r[0],
            "timestamp": r[1],
            "received_at": r[2],
            "event_type": r[3],
            "platform": r[4],
            "cloud": r[5],
            "resource_type": r[6],
            "resource_id": r[7],
            "project_id": r[8],
            "source": r[9],
            "payload": r[10],
        }
        for r in recs[:limit]
    ]
    more = len(recs) > limit
    return Page(items, (parse_instant(items[-1]["timestamp"]), items[-1]["event_id"]) if more else None)


def resources_json_page(recs: Sequence[Sequence[Any]], limit: int) -> Page[dict[str, Any], ResourceKey]:
    """The page of ``limit`` projection rows from the rows of ``ROW_JSON_SELECT``."""
    items = [
        {
            "cloud": r[0],
            "resource_type": r[1],
            "resource_id": r[2],
            "platform": r[3],
            "project_id": r[4],
            "state": r[5],
            "size": r[6],
            "created_at": r[7],
            "deleted_at": r[8],
            "last_event_type": r[9],
            "last_event_at": r[10],
            "last_payload": {} if r[11] is None else r[11],
            "first_event_at": r[12],
        }
        for r in recs[:limit]
    ]
    last = items[-1] if len(recs) > limit else None
    return Page(
        items,
        None if last is None else ResourceKey(last["cloud"], last["resource_type"], last["resource_id"]),
    )
