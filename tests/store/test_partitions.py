"""Events partitioned by month on PostgreSQL: migration 0010 in place on a populated database, the
partitions made ahead (and a month split out of the default partition), several replicas at once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import anyio
import psycopg
import pytest
from partition_support import FAR, all_events, answers, populate

from tally.core import Event, parse_event
from tally.store import EventFilter, RetentionPolicy, Store, maintain_events, open_store
from tally.store._migrations import load_migrations
from tally.store.internals import events_partition_stats

pytestmark = pytest.mark.anyio


def version_before_partitioning(store: Store) -> int:
    versions = [m.version for m in load_migrations(store.dialect) if m.name == "events_by_month"]  # type: ignore[attr-defined]
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

    # 0010 first; the migrations after it (price lists, billing periods) leave events alone.
    first = version_before_partitioning(store) + 1
    assert await store.migrate_up() == list(range(first, (await store.schema_status()).latest + 1))

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


@pytest.fixture
async def partitioned(pg_schema_url: str) -> AsyncIterator[Store]:
    async with open_store(pg_schema_url) as store:
        await store.migrate_up()
        yield store


def far_event(event_id: str, at: str) -> Event:
    return parse_event(
        {
            "event_id": event_id,
            "timestamp": at,
            "event_type": "compute.instance.create.end",
            "platform": "openstack",
            "cloud": "os-a",
            "resource_type": "instance",
            "resource_id": f"vm-{event_id}",
            "project_id": "p1",
            "payload": {"state": "active", "size": {"vcpus": 1, "ram_gb": 2, "disk_gb": 10, "flavor": "m"}},
        }
    )


async def test_the_coming_months_are_made_and_a_month_is_split_out_of_the_default(
    partitioned: Store, pg_schema_url: str
) -> None:
    store = partitioned
    # Dated in months no partition covers yet: the default partition takes them.
    await store.write_batch([far_event("a", "2031-05-03T00:00:00Z"), far_event("b", "2031-07-09T00:00:00Z")])
    assert where_rows_are(pg_schema_url) == {"events_default": 2}
    outcome = await maintain_events(
        store, ahead=2, policy=RetentionPolicy(), now=datetime(2031, 5, 20, tzinfo=UTC)
    )
    assert outcome is not None and not outcome.skipped
    made = [m.strftime("%Y-%m") for m in outcome.ensured.created]
    # From the month after the newest partition up to two ahead of "now": none skipped.
    assert made[-3:] == ["2031-05", "2031-06", "2031-07"] and outcome.ensured.moved_rows == 2
    assert where_rows_are(pg_schema_url) == {"events_p203105": 1, "events_p203107": 1}
    assert outcome.stats.default_rows == 0
    # The moved rows are the same rows, still append-only, and the next round has nothing to do.
    assert [e.event.event_id for e in (await store.list_events(EventFilter())).items] == ["a", "b"]
    with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
        sql(pg_schema_url, "DELETE FROM events")
    again = await maintain_events(
        store, ahead=2, policy=RetentionPolicy(), now=datetime(2031, 5, 20, tzinfo=UTC)
    )
    assert again is not None and again.ensured.created == () and again.stats == outcome.stats


async def test_replicas_maintaining_at_once_make_each_month_once(
    partitioned: Store, pg_schema_url: str
) -> None:
    await partitioned.write_batch([far_event(f"e{n}", f"2030-{n:02d}-02T00:00:00Z") for n in range(1, 13)])
    outcomes = []

    async def replica() -> None:
        async with open_store(pg_schema_url) as store:
            outcomes.append(
                await maintain_events(
                    store, ahead=3, policy=RetentionPolicy(), now=datetime(2030, 12, 1, tzinfo=UTC)
                )
            )

    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(replica)
    made = [m for o in outcomes if o is not None for m in o.ensured.created]
    assert len(made) == len(set(made)) and datetime(2031, 3, 1, tzinfo=UTC) in made
    final = await maintain_events(
        partitioned, ahead=3, policy=RetentionPolicy(), now=datetime(2030, 12, 1, tzinfo=UTC)
    )
    assert final is not None and final.ensured.created == () and final.stats.default_rows == 0
    assert set(where_rows_are(pg_schema_url)) == {f"events_p2030{n:02d}" for n in range(1, 13)}


async def test_sqlite_has_no_partitions(tmp_path: Path) -> None:
    async with open_store(f"sqlite:///{tmp_path / 's.sqlite3'}") as store:
        await store.migrate_up()
        assert await maintain_events(store, ahead=2, policy=RetentionPolicy(months=1)) is None
        assert await events_partition_stats(store) is None
