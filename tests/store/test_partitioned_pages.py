"""Events pages on the partitioned table, read a partition's range at a time (``_page_windows``).

The ranges (pure): in order, covering the asked window exactly, none across a partition's bound. The
pages (PostgreSQL, migration 0010 on a populated store with rows in every month and in the default
partition): every filter, window and page size pages through the same events as the one statement of
a single table, and a page that fills in its first range reads no other.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from partition_support import MONTHS, UPTO, populate

from tally.store import EventFilter, RetentionPolicy, Store, maintain_events, open_store
from tally.store._page_windows import page_windows, read_events_page
from tally.store._sql_events import EventsSql
from tally.store._sql_text import EVENT_SELECT
from tally.store.internals import EventKey

pytestmark = pytest.mark.anyio

instants = st.datetimes(
    min_value=datetime(2025, 1, 1), max_value=datetime(2028, 1, 1), timezones=st.just(UTC)
)
month_sets = st.sets(
    st.builds(lambda y, m: datetime(y, m, 1, tzinfo=UTC), st.integers(2025, 2027), st.integers(1, 12)),
    max_size=30,
)


@given(month_sets, st.none() | instants, st.none() | instants)
def test_the_ranges_cover_the_window_in_order_each_holding_one_month(
    months: set[datetime], start: datetime | None, end: datetime | None
) -> None:
    windows = page_windows(months, start, end)
    assert windows[0][0] == start and windows[-1][1] == end
    assert all(a[1] == b[0] for a, b in pairwise(windows))  # contiguous
    assert all(lo is None or hi is None or lo < hi for lo, hi in windows[1:-1])
    # Cut at each month's start but the first's: no range holds two months' starts, so no statement
    # reaches two partitions (the first range also takes what lies before the first month).
    later_starts = sorted(months)[1:]
    for lo, hi in windows:
        assert not any((lo is None or lo < cut) and (hi is None or cut < hi) for cut in later_starts)
    assert len(windows) <= len(months) + 1


def test_without_partitions_a_page_is_one_range() -> None:
    at = datetime(2026, 7, 1, tzinfo=UTC)
    assert page_windows([], None, None) == [(None, None)]
    assert page_windows([], at, None) == [(at, None)]


@pytest.fixture
async def partitioned(pg_schema_url: str) -> AsyncIterator[Store]:
    async with open_store(pg_schema_url) as store:
        await store.migrate_up()
        await populate(store, resources=300)
        # The months of the rows, split out of the default partition as the daemon's upkeep does.
        await maintain_events(store, ahead=2, policy=RetentionPolicy(), now=UPTO)
        yield store


async def single_statement_page(
    store: Store, filters: EventFilter, limit: int, after: EventKey | None
) -> list[tuple[Any, ...]]:
    """The page as one statement over the whole table reads it (the reference)."""
    return await store.seam.fetch(
        *EventsSql(store.seam).events_page_sql(filters, limit, after, select=EVENT_SELECT)
    )  # type: ignore[attr-defined]


FILTERS = [
    EventFilter(),
    EventFilter(cloud="os-b"),
    EventFilter(cloud="os-a", project_id="p2"),
    EventFilter(event_type="compute.instance.resize.end"),
    EventFilter(start=MONTHS[1] - timedelta(microseconds=1)),
    EventFilter(cloud="os-b", start=MONTHS[2] + timedelta(days=27), end=MONTHS[4] + timedelta(seconds=1)),
    EventFilter(start=datetime(1989, 1, 1, tzinfo=UTC), end=MONTHS[0]),  # the default partition only
    EventFilter(start=MONTHS[-1]),  # 2090's row, in the default partition
    EventFilter(cloud="nowhere"),
]


@pytest.mark.parametrize("limit", [1, 7, 100])
async def test_every_page_is_the_single_statements(partitioned: Store, limit: int) -> None:
    store = partitioned
    # The pages below go month by month: the store sees the month partitions (June 2026 on).
    months = await store.seam._partition_months.get(store.seam.fetch)  # type: ignore[attr-defined]
    assert set(MONTHS[:-1]) <= set(months)
    for filters in FILTERS:
        after: EventKey | None = None
        pages = 0
        while True:
            page = await store.list_events(filters, limit=limit, after=after)
            expected = await single_statement_page(store, filters, limit, after)
            assert [s.event.event_id for s in page.items] == [r[0] for r in expected[:limit]], filters
            assert (page.next_key is not None) == (len(expected) > limit)
            wire = await store.list_events_json(filters, limit=limit, after=after)
            assert wire.items == [s.to_wire() for s in page.items] and wire.next_key == page.next_key
            pages += 1
            if page.next_key is None or pages > 40:
                break
            after = page.next_key


async def test_a_page_full_in_its_first_range_reads_no_other(partitioned: Store) -> None:
    store = partitioned
    statements: list[str] = []

    async def fetch(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        statements.append(sql)
        return await store.seam.fetch(sql, params)  # type: ignore[attr-defined,no-any-return]

    def page_sql(window: EventFilter, rows: int, after: EventKey | None) -> tuple[str, list[Any]]:
        return EventsSql(store.seam).events_page_sql(window, rows, after, select=EVENT_SELECT)  # type: ignore[attr-defined,no-any-return]

    months = [datetime(2026, m, 1, tzinfo=UTC) for m in range(6, 13)]
    filters = EventFilter(cloud="os-a", start=MONTHS[1])
    recs = await read_events_page(fetch, page_sql, months, filters, 5, None)
    assert len(recs) == 6 and len(statements) == 1
    statements.clear()
    # A first page without a start: what lies before the first month (1990's row, in the default
    # partition) is read with the first month, not by a statement of its own.
    recs = await read_events_page(fetch, page_sql, months, EventFilter(), 5, None)
    assert len(recs) == 6 and len(statements) == 1 and recs[0][1].year == 1990
    statements.clear()
    # Three rows before a month's end: the page goes on into the next month's range, and stops there.
    before = await store.list_events(EventFilter(cloud="os-a", end=MONTHS[2]), limit=10_000)
    start = before.items[-3].event.timestamp
    late = EventFilter(cloud="os-a", start=start)
    recs = await read_events_page(fetch, page_sql, months, late, 20, None)
    assert len(recs) == 21 and len(statements) == 2
    assert [r[0] for r in recs[:3]] == [s.event.event_id for s in before.items[-3:]]
    assert all(r[1] >= MONTHS[2] for r in recs[3:])
