"""The pure text the shared SQL is built from: column lists, WHERE clauses, key-joined reads, JSON.

No I/O and no store: functions of their arguments only, so that the backends
and the tests of query plans can use them without a database.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import orjson

from tally.core import ResourceKey, may_hold_wide_integer

from ._interface import RuleViolation

EVENT_COLUMNS = (
    "event_id",
    "timestamp",
    "received_at",
    "event_type",
    "platform",
    "cloud",
    "resource_type",
    "resource_id",
    "project_id",
    "source",
    "payload",
)
ROW_COLUMNS = (
    "cloud",
    "resource_type",
    "resource_id",
    "platform",
    "project_id",
    "state",
    "size",
    "created_at",
    "deleted_at",
    "last_event_type",
    "last_event_at",
    "last_payload",
    "first_event_at",
    "last_received_at",
    "last_event_id",
)
EVENT_SELECT = ", ".join(EVENT_COLUMNS)
ROW_SELECT = ", ".join(ROW_COLUMNS)
# The columns a fold reads: last_payload is left out (NULL) because folding any event overwrites it, and it
# is the largest value of a row to send, parse and convert.
FOLD_ROW_COLUMNS = tuple("NULL" if c == "last_payload" else c for c in ROW_COLUMNS)
KEY_CHUNK = 300
REBUILD_BATCH = 100


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys: equal documents get equal text (the seed rollback compares it)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        # orjson refuses integers beyond 64 bits, which JSON allows.
        return json.dumps(value, sort_keys=True, separators=(",", ":"))


def loads_json(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse stored JSON: orjson, unless the text may hold an integer beyond 64 bits (orjson would make
    it a float; json keeps it exact)."""
    raw = data if type(data) is bytes else data.encode() if isinstance(data, str) else bytes(data)
    # The translate scan, not a regex: a page of 100 rows parses up to 200 documents.
    if may_hold_wide_integer(raw):
        return json.loads(raw)
    return orjson.loads(raw)


def key_order(key: ResourceKey) -> tuple[str, str, str]:
    return (key.cloud, key.resource_type, key.resource_id)


def where_clause(conditions: Iterable[tuple[str, Any]]) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    for clause, value in conditions:
        clauses.append(clause)
        if isinstance(value, tuple):
            params.extend(value)
        else:
            params.append(value)
    return (" AND ".join(clauses) if clauses else "TRUE"), params


def key_params(keys: Sequence[ResourceKey]) -> list[str]:
    return [part for key in keys for part in key_order(key)]


def select_list(columns: Sequence[str], alias: str) -> str:
    """``columns`` qualified by the table alias (a ``NULL`` placeholder stays as it is)."""
    return ", ".join(c if c == "NULL" else f"{alias}.{c}" for c in columns)


def _by_key(columns: Sequence[str], table: str, count: int) -> str:
    # The keys, as a VALUES list, are joined: one index probe each. SQLite answers the row-value form
    # "(cloud, resource_type, resource_id) IN (VALUES ...)" by scanning the whole table instead.
    values = ", ".join("(?, ?, ?)" for _ in range(count))
    return (
        f"SELECT {select_list(columns, 't')} FROM (VALUES {values}) AS k JOIN {table} AS t "
        "ON t.cloud = k.column1 AND t.resource_type = k.column2 AND t.resource_id = k.column3"
    )


@lru_cache(maxsize=64)
def rows_by_key_sql(count: int) -> str:
    """The fold's columns of the projection rows of ``count`` keys (bound as cloud, type, id each)."""
    return _by_key(FOLD_ROW_COLUMNS, "current_resources", count)


@lru_cache(maxsize=64)
def history_by_key_sql(count: int) -> str:
    """Every stored event of ``count`` keys (bound as cloud, type, id each)."""
    return _by_key(EVENT_COLUMNS, "events", count)


def group_columns(group_by: Sequence[str], allowed: frozenset[str]) -> list[str]:
    """The group columns, validated against a fixed set (they are spliced into SQL)."""
    columns: list[str] = []
    for name in group_by:
        if name not in allowed:
            raise RuleViolation(f"cannot group by {name!r}; allowed: {', '.join(sorted(allowed))}")
        if name not in columns:
            columns.append(name)
    if not columns:
        raise RuleViolation("group_by needs at least one column")
    return columns
