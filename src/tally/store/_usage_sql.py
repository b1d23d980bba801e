"""The usage export's reads, written once for both backends: pages (``Store.usage_histories``) and
the whole scope as one stream (``Store.open_usage_stream``).

A page is two statements: the keys of the scope (from the projection, or from the project's events
when the scope names a project, since a resource that moved away keeps its past there), then the
events of those keys that the window folds. Only the columns the fold reads travel, and of the
payload only ``state`` and ``size``, extracted by the database: a payload can be many times their
size.

The stream is what an export reads. On PostgreSQL it is one statement over the whole scope through
a server-side cursor, fetched ``STREAM_ROWS`` rows at a time: the planner joins the projection to
the events once (a merge of two index scans) instead of probing them page by page, and each fetch is
a few milliseconds of the server's time. Its rows are ``UsageFact`` tuples, not events: the export
folds them with ``tally.core.fact_usage``, and building an ``Event`` per row would cost more than the
fold. SQLite's one connection is shared under a lock (the ingest writes through it too), so there
the stream is read in pages, each its own short transaction.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import lru_cache
from typing import Any

import orjson

from tally.core import (
    Event,
    ResourceKey,
    SizeNames,
    StoredEvent,
    UsageFact,
    may_hold_wide_integer,
    named_size,
    usage_fact,
)

from ._interface import Page, UsageScope
from ._named import NamesByCloud, named, size_names_of
from ._seam import SqlSeam, StreamingTx

_KEY_CHUNK = 300  # keys per statement: SQLite binds at most a few thousand variables
# Rows per fetch of the stream. From 500 to 20,000 the export's CPU time is the same within noise
# (docs/benchmarks.md, "usage"): a round trip per 5,000 rows is noise, and a chunk stays a few MiB.
STREAM_ROWS = 5000
_STREAM_PAGE = 1000  # resources per page where the stream is read in pages (SQLite)
_SIZE_CACHE = 4096  # distinct size texts remembered per stream: a cloud has few flavors and volume sizes
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


def _scope_conditions(store: SqlSeam, scope: UsageScope) -> tuple[list[str], list[Any]]:
    """The conditions on the projection rows of a scope without a project."""
    conds: list[str] = []
    params: list[Any] = []
    for column in ("cloud", "platform", "resource_type"):
        value = getattr(scope, column)
        if value is not None:
            conds.append(f"{column} = ?")
            params.append(value)
    conds.append("first_event_at < ?")
    params.append(store.ts(scope.end))
    if scope.as_of is None:
        # A row deleted before the window holds nothing in it: only a create revives a resource,
        # and a create moves deleted_at. With as_of, a delete the store took later is not seen, so
        # no row may be passed over.
        conds.append("(deleted_at IS NULL OR deleted_at >= ?)")
        params.append(store.ts(scope.start))
    return conds, params


def _after_condition(scope: UsageScope, after: ResourceKey) -> tuple[str, list[Any]]:
    """``key > after`` over the key columns the scope does not pin to one value.

    PostgreSQL starts an index scan at a row comparison only if no equality names its first column:
    ``cloud = ? AND (cloud, type, id) > (?, ?, ?)`` walks the cloud from its first row on every page,
    so paging through a large cloud would cost its square. Pinned columns are equal in every row of
    the scope, so leaving them out of the comparison changes nothing but the plan."""
    columns = [
        ("cloud", after.cloud),
        ("resource_type", after.resource_type),
        ("resource_id", after.resource_id),
    ]
    pinned = 0
    if scope.cloud is not None:
        pinned = 2 if scope.resource_type is not None else 1
    free = columns[pinned:]
    names = ", ".join(name for name, _ in free)
    marks = ", ".join("?" for _ in free)
    return f"({names}) > ({marks})", [value for _, value in free]


def _keys_select(store: SqlSeam, scope: UsageScope) -> tuple[str, list[Any]]:
    """The keys of the scope, as one SELECT (without order): of the projection, or of a project's events."""
    if scope.project_id is None:
        conds, params = _scope_conditions(store, scope)
        return f"SELECT {_KEY} FROM current_resources WHERE {' AND '.join(conds)}", params
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
    return f"SELECT DISTINCT {_KEY} FROM events WHERE {' AND '.join(conds)}", params


def _keys_sql(
    store: SqlSeam, scope: UsageScope, after: ResourceKey | None, limit: int
) -> tuple[str, list[Any]]:
    sql, params = _keys_select(store, scope)
    if after is not None:
        cond, after_params = _after_condition(scope, after)
        sql += f" AND {cond}"
        params += after_params
    return f"{sql} ORDER BY {_KEY} LIMIT ?", [*params, limit + 1]


async def usage_histories(
    store: SqlSeam, scope: UsageScope, *, limit: int, after: ResourceKey | None
) -> Page[tuple[ResourceKey, list[StoredEvent]], ResourceKey]:
    sql, params = _keys_sql(store, scope, after, limit)
    event_filter, filter_params = _event_filter(store, scope)
    histories: list[tuple[ResourceKey, list[StoredEvent]]] = []
    async with store.tx() as tx:
        recs = await tx.fetchall(sql, params)
        keys = [ResourceKey(*r) for r in recs[:limit]]
        names = await size_names_of(tx, {key.cloud for key in keys})
        # The page's keys are named in the statement: the planner probes the events' index once per key
        # whatever it estimates of a key range (a range joined to the projection may be hashed against
        # a scan of every event).
        for start in range(0, len(keys), _KEY_CHUNK):
            chunk = keys[start : start + _KEY_CHUNK]
            bound = [part for key in chunk for part in (key.cloud, key.resource_type, key.resource_id)]
            rows = await tx.fetchall(
                _events_of_keys_sql(store.dialect, len(chunk), event_filter), [*bound, *filter_params]
            )
            _collect(store, rows, names, histories)
    return Page(histories, keys[-1] if len(recs) > limit else None)


FactHistory = tuple[ResourceKey, list[UsageFact]]


def open_usage_stream(
    store: SqlSeam, scope: UsageScope, *, rows: int = STREAM_ROWS
) -> AbstractAsyncContextManager[AsyncIterator[list[FactHistory]]]:
    """Every resource of the scope in key order with its facts, in lists of whole histories."""
    if store.dialect == "postgresql":
        return _cursor_stream(store, scope, rows)
    return _paged_stream(store, scope)


@asynccontextmanager
async def _cursor_stream(
    store: SqlSeam, scope: UsageScope, rows: int
) -> AsyncIterator[AsyncIterator[list[FactHistory]]]:
    keys, key_params = _keys_select(store, scope)
    event_filter, filter_params = _event_filter(store, scope)
    state, _ = _PAYLOAD_MEMBERS[store.dialect]
    sql = (
        "SELECT t.cloud, t.resource_type, t.resource_id, t.timestamp, t.received_at, t.event_id, "
        f"t.event_type, t.project_id, {state}, (t.payload->'size')::text FROM ({keys}) AS k JOIN events AS t "
        f"{_JOIN.format('cloud', 'resource_type', 'resource_id')} WHERE {event_filter} {_ORDER}"
    )
    async with store.tx() as tx:
        if not isinstance(tx, StreamingTx):
            raise TypeError(f"a {store.dialect} transaction cannot stream")
        names = await size_names_of(tx, None if scope.cloud is None else (scope.cloud,))
        async with tx.stream(sql, [*key_params, *filter_params], size=rows) as chunks:
            yield _histories(chunks, names)


def _size_of(text: str | None) -> Any:
    # As the store parses any stored JSON (``loads_json``): orjson, unless an integer may pass 64 bits.
    if text is None:
        return None
    raw = text.encode()
    return json.loads(raw) if may_hold_wide_integer(raw) else orjson.loads(raw)


async def _histories(
    chunks: AsyncIterator[list[tuple[Any, ...]]], names: NamesByCloud
) -> AsyncIterator[list[FactHistory]]:
    """Rows (in key order, then fold order) to whole histories, sizes named; the last of a chunk may go
    on in the next."""
    sizes: dict[str | None, Any] = {}
    # Sizes as named, per (cloud, type, text); only for the pairs the names hold anything of.
    named_sizes: dict[tuple[str, str, str | None], Any] = {}
    naming = {(cloud, rtype) for cloud, of_cloud in names.items() for rtype, _, _ in of_cloud}
    open_key: tuple[str, str, str] | None = None
    facts: list[UsageFact] = []
    done: list[FactHistory] = []
    async for chunk in chunks:
        for cloud, rtype, rid, at, received, event_id, event_type, project_id, state, size_text in chunk:
            if open_key is None or open_key[2] != rid or open_key[1] != rtype or open_key[0] != cloud:
                if open_key is not None:
                    done.append((ResourceKey(*open_key), facts))
                open_key, facts = (cloud, rtype, rid), []
            # The texts of a cloud's sizes repeat (a few flavors, volume sizes): each is parsed once.
            size = sizes.get(size_text, sizes)
            if size is sizes:
                if len(sizes) >= _SIZE_CACHE:
                    sizes.clear()
                size = sizes[size_text] = _size_of(size_text)
            if naming and (cloud, rtype) in naming:
                size = _named_size(named_sizes, names[cloud], cloud, rtype, size_text, size)
            facts.append((at, received, event_id, event_type, project_id, state, size))
        if done:
            yield done
            done = []
    if open_key is not None:
        yield [(ResourceKey(*open_key), facts)]


def _named_size(
    cache: dict[tuple[str, str, str | None], Any],
    names: SizeNames,
    cloud: str,
    rtype: str,
    text: str | None,
    size: Any,
) -> Any:
    key = (cloud, rtype, text)
    found = cache.get(key, cache)
    if found is cache:
        if len(cache) >= _SIZE_CACHE:
            cache.clear()
        found = cache[key] = named_size(rtype, size, names)
    return found


@asynccontextmanager
async def _paged_stream(store: SqlSeam, scope: UsageScope) -> AsyncIterator[AsyncIterator[list[FactHistory]]]:
    yield _pages(store, scope)


async def _pages(store: SqlSeam, scope: UsageScope) -> AsyncIterator[list[FactHistory]]:
    after: ResourceKey | None = None
    while True:
        page = await usage_histories(store, scope, limit=_STREAM_PAGE, after=after)
        if page.items:
            yield [(key, [usage_fact(e) for e in events]) for key, events in page.items]
        if page.next_key is None:
            return
        after = page.next_key


def _collect(
    store: SqlSeam,
    rows: Sequence[Sequence[Any]],
    names: NamesByCloud,
    into: list[tuple[ResourceKey, list[StoredEvent]]],
) -> None:
    """Append each key's events (``rows`` come in key order), their sizes named, to ``into``."""
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
        events.append(named(StoredEvent(event, from_ts(received)), names))
