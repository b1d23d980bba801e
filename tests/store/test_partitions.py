"""Events partitioned by month on PostgreSQL: migration 0010 in place on a populated database, the
partitions made ahead (and a month split out of the default partition), several replicas at once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import anyio
import psycopg
import pytest

from tally.core import Event, ResourceKey
from tally.store import (
    EventFilter,
    RetentionPolicy,
    Store,
    events_partition_stats,
    maintain_events,
    open_store,
)

from partition_support import FAR, all_events, answers, populate

pytestmark = pytest.mark.anyio


def version_before_partitioning(store: Store) -> int:
    versions = [m.version for m in store._migrations if m.name == "events_by_month"]  # type: ignore[attr-defined]
    assert len(versions) == 1
    return versions[0] - 1


def where_rows_are(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        recs = conn.execute("SELECT tableoid::regclass::text, count(*) FROM events GROUP BY 1").fetchall()
    return {name: int(count) for name, count in recs}


def sql(url: str, statement: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(statement)
        return list(cursor.fetchall()) if cursor.description else []


@pytest.fixture
async def unpartitioned(pg_schema_url: str) -> AsyncIterator[Store]:
    """A PostgreSQL store at the version before 0010, populated."""
    async with open_store(pg_schema_url) as store:
        await store.migrate_up()
        await store.migrate_down(version_before_partitioning(store))
        await populate(store)
        yield store


async def test_migration_partitions_a_populated_table_in_place(
    unpartitioned: Store, pg_schema_url: str
) -> None:
    store = unpartitioned
    assert list(where_rows_are(pg_schema_url)) == ["events"]
    before = await answers(store)
    assert len(before.events) > 2000 and len(before.rows) == 802

    assert await store.migrate_up() == [version_before_partitioning(store) + 1]

    located = where_rows_are(pg_schema_url)
    assert located["events_default"] == len(FAR)  # 1990 and 2090: outside every month partition
    assert {name for name in located if name != "events_default"} == {
        f"events_p2026{m:02d}" for m in range(6, 12)
    }
    assert sum(located.values()) == len(before.events)
    after = await answers(store)
    assert after.events == before.events
    assert after.lifecycles == before.lifecycles
    assert after.rows == before.rows
    assert after.usage == before.usage
    stats = await events_partition_stats(store)
    now = datetime.now(UTC)
    # June 2026 up to two months ahead of now, every month in between.
    expected = (now.year - 2026) * 12 + now.month - 6 + 3
    assert stats is not None and (stats.attached, stats.detached, stats.default_rows) == (expected, 0, 2)


async def test_partitioned_events_stay_append_only_and_deduplicated(
    unpartitioned: Store, pg_schema_url: str
) -> None:
    store = unpartitioned
    await store.migrate_up()
    with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
        sql(pg_schema_url, "UPDATE events SET project_id = 'x' WHERE resource_id = 'vm-0001'")
    with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
        sql(pg_schema_url, "DELETE FROM events WHERE timestamp < '2000-01-01'")
    page = await store.list_events(EventFilter(), limit=300)
    again: list[Event] = [stored.event for stored in page.items]
    outcome = await store.write_batch(again)
    assert (len(outcome.inserted), len(outcome.duplicates)) == (0, 300)
    assert sum(where_rows_are(pg_schema_url).values()) == len(await all_events(store))


async def test_migration_rolls_back_to_one_table(unpartitioned: Store, pg_schema_url: str) -> None:
    store = unpartitioned
    before = await all_events(store)
    await store.migrate_up()
    await store.migrate_down(version_before_partitioning(store))
    assert list(where_rows_are(pg_schema_url)) == ["events"]
    assert await all_events(store) == before
    with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
        sql(pg_schema_url, "DELETE FROM events")
