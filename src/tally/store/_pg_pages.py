"""PostgreSQL's listing pages as the API's JSON objects, built straight from the rows.

Through ``StoredEvent`` and ``ResourceRow`` a page cost the API a frozen dataclass per row, then a
dict per row and ``format_instant`` for each of its instants, a large part of its Python (measured in
docs/benchmarks.md, section "reads", the quiet host's run of 2026-12-01 14:27). Here PostgreSQL
writes each instant as ``format_instant`` does (RFC 3339 in UTC with ``Z``, the fraction without
trailing zeros, none when it is zero) and each row becomes its object in one dict display; the objects
equal ``to_wire`` of the same rows (tests/store/test_pg_pages.py).

The jsonb documents arrive as their text (``RawJsonb``) and are checked as one: a single scan of a
page's documents tells whether any may hold an integer past 64 bits or a float that ``json.dumps`` would
write in exponent form where orjson does not, instead of one scan per document when it is parsed and
another over the whole answer when it is written, which cost the server CPU on every page (measured in
docs/benchmarks.md, section "reads", the lean lane). PostgreSQL writes a jsonb number as a plain
decimal, never in exponent form, so such a float is a number below 1e-4 (its text holds ``0.0000``) or
of at least 1e16 (a run of 17 digits); a page whose documents hold neither is marked ``numbers_plain``.
Strings may hold either too: such a page is only left unmarked, and its documents are read exactly
(``loads_json``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from psycopg.adapt import Buffer, Loader

from tally.core import ResourceKey, has_digit_run, parse_instant

from ._interface import EventKey, Page
from ._sql_text import loads_json

_LONG_NUMBER_DIGITS = 17  # a float of at least 1e16 in plain decimal
_SMALL_NUMBER = b"0.0000"


class RawJsonb(Loader):
    """jsonb as the bytes of its text, parsed by the page (``_documents``), not by psycopg."""

    def load(self, data: Buffer) -> bytes:
        return bytes(data)


def _documents(texts: list[bytes | None]) -> tuple[list[Any], bool]:
    """The documents parsed (None stays None), and whether every number in them is plain."""
    joined = b"\n".join(t for t in texts if t is not None)
    if has_digit_run(joined, _LONG_NUMBER_DIGITS):
        return [None if t is None else loads_json(t) for t in texts], False
    loads = orjson.loads
    return [None if t is None else loads(t) for t in texts], _SMALL_NUMBER not in joined


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
    """The page of ``limit`` events from the rows of ``EVENT_JSON_SELECT`` (one more: a next page),
    their payloads read as ``RawJsonb``."""
    rows = recs[:limit]
    payloads, plain = _documents([r[10] for r in rows])
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
            "payload": payload,
        }
        for r, payload in zip(rows, payloads, strict=True)
    ]
    more = len(recs) > limit
    next_key = (parse_instant(items[-1]["timestamp"]), items[-1]["event_id"]) if more else None
    return Page(items, next_key, numbers_plain=plain)


def resources_json_page(recs: Sequence[Sequence[Any]], limit: int) -> Page[dict[str, Any], ResourceKey]:
    """The page of ``limit`` projection rows from the rows of ``ROW_JSON_SELECT``, their documents read
    as ``RawJsonb``."""
    rows = recs[:limit]
    documents, plain = _documents([doc for r in rows for doc in (r[6], r[11])])
    items = [
        {
            "cloud": r[0],
            "resource_type": r[1],
            "resource_id": r[2],
            "platform": r[3],
            "project_id": r[4],
            "state": r[5],
            "size": documents[2 * i],
            "created_at": r[7],
            "deleted_at": r[8],
            "last_event_type": r[9],
            "last_event_at": r[10],
            "last_payload": {} if r[11] is None else documents[2 * i + 1],
            "first_event_at": r[12],
        }
        for i, r in enumerate(rows)
    ]
    last = items[-1] if len(recs) > limit else None
    return Page(
        items,
        None if last is None else ResourceKey(last["cloud"], last["resource_type"], last["resource_id"]),
        numbers_plain=plain,
    )
