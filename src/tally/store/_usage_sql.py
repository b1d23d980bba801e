"""The usage export's read (``Store.usage_histories``), written once for both backends.

A page is two statements: the keys of the scope (from the projection, or from the project's events
when the scope names a project, since a resource that moved away keeps its past there), then the
events of those keys that the window folds. Only the columns the fold reads travel, and of the
payload only ``state`` and ``size``, extracted by the database: a payload can be many times their
size.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from tally.core import Event, ResourceKey, StoredEvent

from ._interface import Page, UsageScope

if TYPE_CHECKING:
    from ._sql import SqlStore

_KEY_CHUNK = 300  # keys per statement: SQLite binds at most a few thousand variables
_PAYLOAD_MEMBERS = {
    "postgresql": ("t.payload->>'state'", "t.payload->'size'"),
    "sqlite": ("json_extract(t.payload, '$.state')", "json_extract(t.payload, '$.size')"),
}
_KEY = "cloud, resource_type, resource_id"


@lru_cache(maxsize=32)
def _events_sql(dialect: str, count: int, with_as_of: bool) -> str:
    state, size = _PAYLOAD_MEMBERS[dialect]
    values = ", ".join("(?, ?, ?)" for _ in range(count))
    received = " AND t.received_at < ?" if with_as_of else ""
    return (
        "SELECT t.cloud, t.resource_type, t.resource_id, t.event_id, t.timestamp, t.received_at, "
        f"t.event_type, t.platform, t.project_id, t.source, {state}, {size} "
        f"FROM (VALUES {values}) AS k JOIN events AS t "
        "ON t.cloud = k.column1 AND t.resource_type = k.column2 AND t.resource_id = k.column3 "
        f"WHERE t.timestamp < ?{received} "
        "ORDER BY t.cloud, t.resource_type, t.resource_id, t.timestamp, t.received_at, t.event_id"
    )


def _keys_sql(
    store: SqlStore, scope: UsageScope, after: ResourceKey | None, limit: int
) -> tuple[str, list[Any]]:
    conds: list[str] = []
    params: list[Any] = []
    for column in ("cloud", "platform", "resource_type"):
        value = getattr(scope, column)
        if value is not None:
            conds.append(f"{column} = ?")
            params.append(value)
    if after is not None:
        conds.append(f"({_KEY}) > (?, ?, ?)")
        params += [after.cloud, after.resource_type, after.resource_id]
    if scope.project_id is not None:
        conds += ["project_id = ?", "timestamp < ?"]
        params += [scope.project_id, store.ts(scope.end)]
        if scope.as_of is not None:
            conds.append("received_at < ?")
            params.append(store.ts(scope.as_of))
        table, distinct = "events", "DISTINCT "
    else:
        conds.append("first_event_at < ?")
        params.append(store.ts(scope.end))
        if scope.as_of is None:
            # A row deleted before the window holds nothing in it: only a create revives a resource,
            # and a create moves deleted_at. With as_of, a delete the store took later is not seen, so
            # no row may be passed over.
            conds.append("(deleted_at IS NULL OR deleted_at >= ?)")
            params.append(store.ts(scope.start))
        table, distinct = "current_resources", ""
    sql = f"SELECT {distinct}{_KEY} FROM {table} WHERE {' AND '.join(conds)} ORDER BY {_KEY} LIMIT ?"
    return sql, [*params, limit + 1]


async def usage_histories(
    store: SqlStore, scope: UsageScope, *, limit: int, after: ResourceKey | None
) -> Page[tuple[ResourceKey, list[StoredEvent]], ResourceKey]:
    sql, params = _keys_sql(store, scope, after, limit)
    async with store._tx() as tx:
        recs = await tx.fetchall(sql, params)
        keys = [ResourceKey(*r) for r in recs[:limit]]
        histories: dict[ResourceKey, list[StoredEvent]] = {}
        tail = [store.ts(scope.end)] + ([store.ts(scope.as_of)] if scope.as_of is not None else [])
        for start in range(0, len(keys), _KEY_CHUNK):
            chunk = keys[start : start + _KEY_CHUNK]
            bound = [part for key in chunk for part in (key.cloud, key.resource_type, key.resource_id)]
            rows = await tx.fetchall(
                _events_sql(store.dialect, len(chunk), scope.as_of is not None), [*bound, *tail]
            )
            _collect(store, rows, histories)
    page = [(key, histories[key]) for key in keys if key in histories]
    return Page(page, keys[-1] if len(recs) > limit else None)


def _collect(
    store: SqlStore,
    rows: Sequence[Sequence[Any]],
    into: dict[ResourceKey, list[StoredEvent]],
) -> None:
    key: ResourceKey | None = None
    events: list[StoredEvent] = []
    for cloud, rtype, rid, event_id, at, received, etype, platform, project_id, source, state, size in rows:
        if key is None or key.resource_id != rid or key.resource_type != rtype or key.cloud != cloud:
            key = ResourceKey(cloud, rtype, rid)
            events = into.setdefault(key, [])
        payload: dict[str, Any] = {}
        if state is not None:
            payload["state"] = state
        if size is not None:
            payload["size"] = store.from_js(size)
        event = Event(
            event_id, store.from_ts(at), etype, platform, cloud, rtype, rid, project_id, source, payload
        )
        events.append(StoredEvent(event, store.from_ts(received)))
