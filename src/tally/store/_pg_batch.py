"""The PostgreSQL steps of the ingest path (``_sql_ingest``): each one statement of arrays, sent on the
batch's pipelined connection without waiting for its answer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import psycopg

from tally.core import Event, ResourceKey, ResourceRow, as_utc

from ._pg_arrays import event_columns, key_columns
from ._seam import Answer, EventPair
from ._sql_text import FOLD_ROW_COLUMNS, ROW_COLUMNS, select_list

# Batches travel as arrays, one per column, expanded by unnest(): one statement per step (the array
# literals: ``_pg_arrays``).
INSERT_EVENTS = """
INSERT INTO events (event_id, timestamp, received_at, event_type, platform, cloud, resource_type, resource_id,
                    project_id, source, payload)
SELECT e.i, e.t, %s::timestamptz, e.y, e.p, e.c, e.r, e.d, e.o, e.s, e.l::jsonb
FROM unnest(%s::text[], %s::timestamptz[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[],
            %s::text[], %s::text[], %s::text[]) AS e(i, t, y, p, c, r, d, o, s, l)
ON CONFLICT DO NOTHING
RETURNING event_id, timestamp
"""

LOCK_KEYS = """
SELECT pg_advisory_xact_lock(h)
FROM (SELECT DISTINCT hashtextextended(k, 0) AS h FROM unnest(%s::text[]) AS k) AS s
ORDER BY h
"""

# One index probe per key. A plain LATERAL subquery is flattened into a join, and the planner then
# hashes the whole table (a sequential scan per batch, growing with the cloud); LIMIT 1 keeps the
# subquery a per-key probe of the primary key, and cuts nothing since the key is unique.
LOAD_ROWS = f"""
SELECT {select_list(FOLD_ROW_COLUMNS, "c")}
FROM unnest(%s::text[], %s::text[], %s::text[]) AS k(cloud, resource_type, resource_id)
CROSS JOIN LATERAL (
    SELECT * FROM current_resources AS cr
    WHERE cr.cloud = k.cloud AND cr.resource_type = k.resource_type AND cr.resource_id = k.resource_id
    LIMIT 1
) AS c
"""

ROW_TYPES = (
    "text",
    "text",
    "text",
    "text",
    "text",
    "text",
    "jsonb",
    "timestamptz",
    "timestamptz",
    "text",
    "timestamptz",
    "jsonb",
    "timestamptz",
    "timestamptz",
    "text",
)
UPSERT_ROWS = f"""
INSERT INTO current_resources ({", ".join(ROW_COLUMNS)})
SELECT {", ".join(f"r.{c}::{t}" for c, t in zip(ROW_COLUMNS, ROW_TYPES, strict=True))}
FROM unnest({", ".join("%s::timestamptz[]" if t == "timestamptz" else "%s::text[]" for t in ROW_TYPES)})
     AS r({", ".join(ROW_COLUMNS)})
ON CONFLICT (cloud, resource_type, resource_id) DO UPDATE SET
{", ".join(f"{c} = EXCLUDED.{c}" for c in ROW_COLUMNS[3:])}
"""


async def send_row_read(
    conn: psycopg.AsyncConnection[Any],
    keys: Sequence[ResourceKey],
    to_row: Callable[[Sequence[Any]], ResourceRow],
) -> Answer[list[ResourceRow]]:
    """Send the read of the rows of ``keys``; the pipeline answers when the caller awaits it."""
    # Results come back in binary: instants then cost no text formatting and parsing.
    cursor = await conn.execute(LOAD_ROWS, key_columns(keys), binary=True)

    async def answer() -> list[ResourceRow]:
        return list(map(to_row, await cursor.fetchall()))

    return answer


async def send_insert(
    conn: psycopg.AsyncConnection[Any], events: Sequence[Event], at: datetime
) -> Answer[set[EventPair]]:
    """Send the insert of ``events``; the answer holds the (event_id, timestamp) pairs inserted."""
    cursor = await conn.execute(INSERT_EVENTS, [at, *event_columns(events)], binary=True)

    async def answer() -> set[EventPair]:
        return {(r[0], as_utc(r[1])) for r in await cursor.fetchall()}

    return answer
