"""An events page on the partitioned table, read one month partition at a time.

Why: PostgreSQL reads ``ORDER BY timestamp, event_id LIMIT n`` over monthly partitions with a Merge
Append, which takes the first matching row of *every* partition the bounds leave before it returns
one (an ordered Append, which stops once the page is full, needs the default partition pruned, and a
lower bound alone never prunes it). A partition with many rows and none that match (a cloud filter, a
month of another cloud's rows) is then read to its end for a page whose rows all lie in an earlier
month, and a page's p99 was tens of times one heap's (measured in docs/benchmarks.md, section
"scale", the run on monthly partitions). Read range by range, each statement touches one month
partition (and the default partition, which holds only the rare instants no month covers, so its
first match costs nothing) and stops at the page's size, as the index scan of one heap does.

Each range's statement is planned for its values (not prepared): with the cloud's value the planner
sees that a month of other clouds holds none of its rows and seeks the cloud's index; a generic plan
scanned that month's timestamp index instead, reading every row of it, and planning a statement that
bounds one partition costs little next to that (measured in docs/benchmarks.md, section "scale", the
run on monthly partitions).

Each statement sees its own snapshot, where one statement over one table saw one: an event
committed between two of them, dated in a range already read, is not on the page. It lies behind
the cursor the page returns, as does any event stored with an old instant after a page was read:
a keyset page never sees what lands behind it.

``page_windows`` is pure: the ranges, in order, that cover ``[start, end)`` exactly, cut at the start
of every month partition but the first, so that each range holds one month (and what around it no
month covers). Correct whatever the months given (a stale list only costs speed: each range is a
bound of the statement, not a table).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from itertools import pairwise
from typing import Any

from ._interface import EventFilter, EventKey
from ._partitions import ATTACHED_SQL, PARENT, months_named

Window = tuple[datetime | None, datetime | None]  # [lo, hi); None: unbounded


def page_windows(months: Iterable[datetime], start: datetime | None, end: datetime | None) -> list[Window]:
    """The ranges covering ``[start, end)`` in order, cut at every month's start but the first's."""
    cuts = sorted(set(months))[1:]
    cuts = [cut for cut in cuts if (start is None or cut > start) and (end is None or cut < end)]
    bounds: list[datetime | None] = [start, *cuts, end]
    return list(pairwise(bounds))


Fetch = Callable[[str, Sequence[Any]], Awaitable[list[tuple[Any, ...]]]]
PageSql = Callable[[EventFilter, int, EventKey | None], tuple[str, list[Any]]]

# A partition made since is read as part of the range around it until the next read: correct, only
# slower for that while (the daemon makes months ahead, so a new one holds no rows yet).
MONTHS_REFRESH_S = 30.0


class PartitionMonths:
    """The months of the attached partitions of ``events`` (none on one table), read at most every
    ``MONTHS_REFRESH_S``."""

    def __init__(self) -> None:
        self._months: tuple[datetime, ...] = ()
        self._read_at = float("-inf")

    async def get(self, fetch: Fetch) -> tuple[datetime, ...]:
        if time.monotonic() - self._read_at >= MONTHS_REFRESH_S:
            self._months = tuple(sorted(months_named(await fetch(ATTACHED_SQL, [PARENT]))))
            self._read_at = time.monotonic()
        return self._months


async def read_events_page(
    fetch: Fetch,
    page_sql: PageSql,
    months: Sequence[datetime],
    filters: EventFilter,
    limit: int,
    after: EventKey | None,
) -> list[tuple[Any, ...]]:
    """The rows of the page of ``limit`` events (and one more when a next page exists), a range at a
    time: each range's statement asks only for what the page still lacks."""
    start = filters.start
    if after is not None and (start is None or after[0] > start):
        start = after[0]  # (timestamp, event_id) > after: nothing before after's instant
    recs: list[tuple[Any, ...]] = []
    for lo, hi in page_windows(months, start, filters.end):
        window = replace(filters, start=lo, end=hi)
        recs.extend(await fetch(*page_sql(window, limit - len(recs), after)))
        if len(recs) > limit:
            break
    return recs
