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
from typing import Any

from tally.core import Event, ResourceKey, StoredEvent

from ._interface import Page, UsageScope
from ._seam import SqlSeam

_KEY_CHUNK = 300  # keys per statement: SQLite binds at most a few thousand variables
_PAYLOAD_MEMBERS = {
    "postgresql": ("t.payload->>'state'", "t.payload->'size'"),
    "sqlite": ("json_extract(t.payload, '$.state')", "json_extract(t.payload, '$.size')"),
}
_KEY = "cloud, resource_type, resource_id"


_EVENT_COLUMNS = (
    "t.cloud, t.resource_type, t.resource_id, t.event_id, t.timestamp, t.received_at, "
    "t.event_type, t.platform, t.project_id, t.source"
)
_JOIN = "ON t.cloud = k.{0} AND t.resource_type = k.{1} AND t.resource_id = k.{2}"
_ORDER = "ORDER BY t.cloud, t.resource_type, t.resource_id, t.timestamp, t.received_at, t.event_id"


def _event_filter(store: SqlSeam, scope: UsageScope) -> tuple[str, list[Any]]:
    params = [store.ts(scope.end)]
    if scope.as_of is None:
        return "t.timestamp < ?", params
    return "t.timestamp < ? AND t.received_at < ?", [*params, store.ts(scope.as_of)]


@lru_cache(maxsize=32)
def _events_of_keys_sql(dialect: str, count: int, event_filter: str) -> str:
    state, size = _PAYLOAD_MEMBERS[dialect]
    values = ", ".join("(?, ?, ?)" for _ in range(count))
    return (
        f"SELECT {_EVENT_COLUMNS}, {state}, {size} FROM (VALUES {values}) AS k JOIN events AS t "
        f"{_JOIN.format('column1', 'column2', 'column3')} WHERE {event_filter} {_ORDER}"
    )


def _scope_conditions(store: SqlSeam, scope: UsageScope, alias: str) -> tuple[list[str], list[Any]]:
    """The conditions on the projection rows of a scope without a project."""
    conds: list[str] = []
    params: list[Any] = []
    for column in ("cloud", "platform", "resource_type"):
        value = getattr(scope, column)
        if value is not None:
            conds.append(f"{alias}{column} = ?")
            params.append(value)
    conds.append(f"{alias}first_event_at < ?")
    params.append(store.ts(scope.end))
    if scope.as_of is None:
        # A row deleted before the window holds nothing in it: only a create revives a resource,
        # and a create moves deleted_at. With as_of, a delete the store took later is not seen, so
        # no row may be passed over.
        conds.append(f"({alias}deleted_at IS NULL OR {alias}deleted_at >= ?)")
        params.append(store.ts(scope.start))
    return conds, params


def _keys_sql(
    store: SqlSeam, scope: UsageScope, after: ResourceKey | None, limit: int
) -> tuple[str, list[Any]]:
    if scope.project_id is None:
        conds, params = _scope_conditions(store, scope, "")
        table = "current_resources"
    else:
        conds, params = [], []
        for column in ("cloud", "platform", "resource_type"):
            value = getattr(scope, column)
            if value is not None:
                conds.append(f"{column} = ?")
                params.append(value)
        conds += ["project_id = ?", "timestamp < ?"]
        params += [scope.project_id, store.ts(scope.end)]
        if scope.as_of is not None:
            conds.append("received_at < ?")
            params.append(store.ts(scope.as_of))
        table = "events"
    if after is not None:
        conds.append(f"({_KEY}) > (?, ?, ?)")
        params += [after.cloud, after.resource_type, after.resource_id]
    distinct = "DISTINCT " if scope.project_id is not None else ""
    sql = f"SELECT {distinct}{_KEY} FROM {table} WHERE {' AND '.join(conds)} ORDER BY {_KEY} LIMIT ?"
    return sql, [*params, limit + 1]


async def usage_histories(
    store: SqlSeam, scope: UsageScope, *, limit: int, after: ResourceKey | None
) -> Page[tuple[ResourceKey, list[StoredEvent]], ResourceKey]:
    sql, params = _keys_sql(store, scope, after, limit)
    event_filter, filter_params = _event_filter(store, scope)
    histories: list[tuple[ResourceKey, list[StoredEvent]]] = []
    async with store._tx() as tx:
        recs = await tx.fetchall(sql, params)
        keys = [ResourceKey(*r) for r in recs[:limit]]
        if keys and scope.project_id is None:
            # The page's range of the projection joined to the events: one statement with a handful of
            # parameters, the rows of the range walked in key order and each probed in the events.
            conds, cond_params = _scope_conditions(store, scope, "k.")
            last = keys[-1]
            conds.append("(k.cloud, k.resource_type, k.resource_id) <= (?, ?, ?)")
            cond_params += [last.cloud, last.resource_type, last.resource_id]
            if after is not None:
                conds.append("(k.cloud, k.resource_type, k.resource_id) > (?, ?, ?)")
                cond_params += [after.cloud, after.resource_type, after.resource_id]
            state, size = _PAYLOAD_MEMBERS[store.dialect]
            rows = await tx.fetchall(
                f"SELECT {_EVENT_COLUMNS}, {state}, {size} FROM current_resources AS k JOIN events AS t "
                f"{_JOIN.format('cloud', 'resource_type', 'resource_id')} "
                f"WHERE {' AND '.join(conds)} AND {event_filter} {_ORDER}",
                [*cond_params, *filter_params],
            )
            _collect(store, rows, histories)
        elif keys:
            for start in range(0, len(keys), _KEY_CHUNK):
                chunk = keys[start : start + _KEY_CHUNK]
                bound = [part for key in chunk for part in (key.cloud, key.resource_type, key.resource_id)]
                rows = await tx.fetchall(
                    _events_of_keys_sql(store.dialect, len(chunk), event_filter), [*bound, *filter_params]
                )
                _collect(store, rows, histories)
    return Page(histories, keys[-1] if len(recs) > limit else None)


def _collect(
    store: SqlSeam, rows: Sequence[Sequence[Any]], into: list[tuple[ResourceKey, list[StoredEvent]]]
) -> None:
    """Append each key's events (``rows`` come in key order) to ``into``."""
    from_ts, from_js = store.from_ts, store.from_js
    last: tuple[str, str, str] | None = None
    events: list[StoredEvent] = []
    for cloud, rtype, rid, event_id, at, received, etype, platform, project_id, source, state, size in rows:
        if last is None or last[2] != rid or last[1] != rtype or last[0] != cloud:
            last = (cloud, rtype, rid)
            events = []
            into.append((ResourceKey(cloud, rtype, rid), events))
        payload: dict[str, Any] = {}
        if state is not None:
            payload["state"] = state
        if size is not None:
            payload["size"] = from_js(size)
        event = Event(event_id, from_ts(at), etype, platform, cloud, rtype, rid, project_id, source, payload)
        events.append(StoredEvent(event, from_ts(received)))
