"""The stored lifecycle intervals of a cloud, read for ``compare``: from a store URL or a Reporting API.

Both fold the same way: every resource of the cloud, its events in fold order, ``tally.core``'s
lifecycle. Over the API that fold is the server's (``GET .../lifecycle``); from a store it is ours.
"""

from __future__ import annotations

from typing import Any

import httpx

from tally.core import Interval, lifecycle, parse_instant
from tally.store import Store, open_store

Intervals = dict[tuple[str, str], tuple[Interval, ...]]
PAGE = 500


class StoredReadError(RuntimeError):
    """The store or the API could not be read; the message says which call."""


async def lifecycles_of_store(store: Store, cloud: str) -> Intervals:
    out: Intervals = {}
    for row in await store.resources_of_cloud(cloud):
        events = await store.lifecycle_events(row.key)
        out[(row.key.resource_type, row.key.resource_id)] = lifecycle(events).intervals
    return out


async def lifecycles_from_store_url(url: str, cloud: str) -> Intervals:
    try:
        async with open_store(url) as store:
            return await lifecycles_of_store(store, cloud)
    except (OSError, ValueError) as exc:
        raise StoredReadError(f"cannot read the store: {exc}") from exc


def _interval(doc: dict[str, Any]) -> Interval:
    end = doc.get("to")
    return Interval(
        start=parse_instant(doc["from"]),
        end=parse_instant(end) if end else None,
        state=str(doc["state"]),
        size=dict(doc.get("size") or {}),
        project_id=str(doc["project_id"]),
    )


async def lifecycles_from_api(
    base_url: str, token: str | None, cloud: str, *, transport: httpx.AsyncBaseTransport | None = None
) -> Intervals:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    kwargs: dict[str, Any] = {"transport": transport} if transport is not None else {}
    out: Intervals = {}
    async with httpx.AsyncClient(
        base_url=base_url.rstrip("/"), headers=headers, timeout=60.0, **kwargs
    ) as client:
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"cloud": cloud, "limit": PAGE}
            if cursor:
                params["cursor"] = cursor
            page = await _get(client, "/api/v1/resources", params)
            for item in page.get("items", []):
                rtype, rid = item["resource_type"], item["resource_id"]
                doc = await _get(client, f"/api/v1/resources/{cloud}/{rtype}/{rid}/lifecycle", None)
                out[(rtype, rid)] = tuple(_interval(i) for i in doc.get("intervals", []))
            cursor = page.get("next_cursor")
            if not cursor:
                return out


async def _get(client: httpx.AsyncClient, path: str, params: dict[str, Any] | None) -> dict[str, Any]:
    try:
        response = await client.get(path, params=params)
    except httpx.HTTPError as exc:
        raise StoredReadError(f"GET {path}: {exc}") from exc
    if not response.is_success:
        raise StoredReadError(f"GET {path}: HTTP {response.status_code}: {response.text.strip()[:200]}")
    doc: dict[str, Any] = response.json()
    return doc
