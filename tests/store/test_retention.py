"""Retention on PostgreSQL: closed months archived, snapshotted and detached; every read answers as before
for the months kept, and the archive answers the usage of the months retired; what forbids a policy."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import psycopg
import pytest
from partition_support import MONTHS, UPTO, Answers, all_rows, answers, populate

from tally.core import parse_event
from tally.store import RetentionPolicy, Store, events_retention_refusal, maintain_events, open_store
from tally.store.internals import archived_month_usage

pytestmark = pytest.mark.anyio

BOUNDARY = datetime(2026, 10, 1, tzinfo=UTC)  # two months kept before December 2026
KEEP_TWO = RetentionPolicy(months=2)


def sql(url: str, statement: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(statement)
        return list(cursor.fetchall()) if cursor.description else []


@pytest.fixture
async def populated(pg_schema_url: str) -> AsyncIterator[tuple[Store, Answers]]:
    async with open_store(pg_schema_url) as store:
        await store.migrate_up()
        await populate(store)
        # Migrated empty in December 2026: the months of June to November are split out of the default.
        made = await maintain_events(store, ahead=2, policy=RetentionPolicy(), now=UPTO)
        assert made is not None and made.ensured.moved_rows > 1000
        yield store, await answers(store)


def from_boundary(intervals: tuple[object, ...]) -> list[tuple[object, ...]]:
    out = []
    for i in intervals:
        start, end = i.start, i.end  # type: ignore[attr-defined]
        if end is None or end > BOUNDARY:
            out.append((max(start, BOUNDARY), end, i.state, dict(i.size), i.project_id))  # type: ignore[attr-defined]
    return out


async def test_retired_months_answer_from_the_archive_and_the_kept_ones_as_before(
    populated: tuple[Store, Answers], pg_schema_url: str
) -> None:
    store, before = populated
    outcome = await maintain_events(store, ahead=2, policy=KEEP_TWO, now=UPTO)
    assert outcome is not None and outcome.refused is None
    assert [r.month for r in outcome.retired] == MONTHS[:4]  # June to September
    assert sum(r.events for r in outcome.retired) > 1000
    assert outcome.stats.detached == 4

    after = await answers(store)
    # The projection is untouched, and a rebuild from what the events table holds now gives it again.
    assert after.rows == before.rows
    await store.rebuild_projection()
    rebuilt = await all_rows(store)
    assert rebuilt == before.rows
    assert {k: (r.last_received_at, r.last_event_id) for k, r in rebuilt.items()} == {
        k: (r.last_received_at, r.last_event_id) for k, r in before.rows.items()
    }
    # Usage: the months kept as they were; the months retired from their archive.
    for month in MONTHS[4:6]:
        assert after.usage[month] == before.usage[month]
    for month in MONTHS[:4]:
        # Only a resource whose events the default partition holds (dated 1990) still folds there.
        assert after.usage[month] == {
            k: v for k, v in before.usage[month].items() if k.resource_id == "far-0"
        }
        assert await archived_month_usage(store, month) == before.usage[month]
    # Lifecycles from the boundary on, with the instants a create and a delete gave.
    for key, whole in before.lifecycles.items():
        now = after.lifecycles[key]
        if not now.intervals and whole.deleted_at is not None and whole.deleted_at < BOUNDARY:
            continue  # ended in a retired month: its record is the archive and the projection row
        assert from_boundary(now.intervals) == from_boundary(whole.intervals), key
        assert (now.created_at, now.deleted_at, now.warnings) == (
            whole.created_at,
            whole.deleted_at,
            whole.warnings,
        )
    # Events pages: what was dated from the boundary on (and in the default partition), plus snapshots.
    kept = [e for e in before.events if e["timestamp"] >= "2026-10" or e["timestamp"] < "2000"]
    assert [e for e in after.events if e["source"] != "retention"] == kept
    snapshots = [e for e in after.events if e["source"] == "retention"]
    assert snapshots and {e["timestamp"][:10] for e in snapshots} == {"2026-10-01"}
    # Live resources, and resources that ended before the boundary and were created again after it.
    assert {e["event_type"] for e in snapshots} == {
        "tally.retention.snapshot",
        "tally.retention.snapshot.delete",
    }
    # Detached, kept as tables, still append-only; a second round has nothing to do.
    assert sql(pg_schema_url, "SELECT count(*) FROM events_p202606")[0][0] == outcome.retired[0].events
    with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
        sql(pg_schema_url, "DELETE FROM events_p202606")
    again = await maintain_events(store, ahead=2, policy=KEEP_TWO, now=UPTO)
    assert again is not None and again.retired == ()
    assert sql(pg_schema_url, "SELECT count(*) FROM retired_months")[0][0] == 4


async def test_drop_removes_the_retired_tables_and_a_late_event_lands_in_the_default(
    populated: tuple[Store, Answers], pg_schema_url: str
) -> None:
    store, before = populated
    outcome = await maintain_events(store, ahead=2, policy=RetentionPolicy(months=2, drop=True), now=UPTO)
    assert outcome is not None and [r.dropped for r in outcome.retired] == [True] * 4
    assert sql(pg_schema_url, "SELECT to_regclass('events_p202606')")[0][0] is None
    assert outcome.stats.detached == 0
    assert await archived_month_usage(store, MONTHS[0]) == before.usage[MONTHS[0]]
    late = parse_event(
        {
            "event_id": "late-1",
            "timestamp": "2026-07-04T00:00:00Z",
            "event_type": "compute.instance.power_off",
            "platform": "openstack",
            "cloud": "os-a",
            "resource_type": "instance",
            "resource_id": "vm-late",
            "project_id": "p1",
            "payload": {"state": "shutoff"},
        }
    )
    await store.write_batch([late])
    again = await maintain_events(store, ahead=2, policy=RetentionPolicy(months=2, drop=True), now=UPTO)
    assert again is not None and again.stats.default_rows == before_default(before) + 1


def before_default(before: Answers) -> int:
    return sum(1 for e in before.events if e["timestamp"] < "2000" or e["timestamp"] >= "2027-03")


async def test_a_cloud_not_reconciled_since_the_boundary_refuses_retention(
    populated: tuple[Store, Answers],
) -> None:
    store, _ = populated
    run = await store.start_sync_run("os-a", started_at=datetime(2026, 9, 20, tzinfo=UTC))
    await store.finish_sync_run(run, "completed", {}, completed_at=datetime(2026, 9, 20, 0, 5, tzinfo=UTC))
    refused = await events_retention_refusal(store, KEEP_TWO, now=UPTO)
    assert refused is not None
    assert refused.startswith("TALLY_EVENTS_RETENTION_MONTHS=2 is shorter than what the live resources")
    assert "'os-a'" in refused and "2026-10-01" in refused and "\n" not in refused
    outcome = await maintain_events(store, ahead=2, policy=KEEP_TWO, now=UPTO)
    assert outcome is not None and outcome.retired == () and outcome.refused == refused
    # Keeping more months moves the boundary before that sync: allowed.
    assert await events_retention_refusal(store, RetentionPolicy(months=3), now=UPTO) is None
    later = await store.start_sync_run("os-a", started_at=datetime(2026, 12, 1, tzinfo=UTC))
    await store.finish_sync_run(later, "completed", {})
    assert await events_retention_refusal(store, KEEP_TWO, now=UPTO) is None


async def test_dropping_a_month_retention_never_archived_is_refused(
    populated: tuple[Store, Answers], pg_schema_url: str
) -> None:
    store, _ = populated
    sql(pg_schema_url, "ALTER TABLE events DETACH PARTITION events_p202606")
    refused = await events_retention_refusal(store, RetentionPolicy(months=2, drop=True), now=UPTO)
    assert refused is not None and refused.startswith(
        "TALLY_EVENTS_RETENTION_DROP would drop events_p202606, whose usage was never archived"
    )
    assert await events_retention_refusal(store, KEEP_TWO, now=UPTO) is None


async def test_no_policy_keeps_everything(populated: tuple[Store, Answers]) -> None:
    store, before = populated
    outcome = await maintain_events(store, ahead=2, policy=RetentionPolicy(), now=UPTO)
    assert outcome is not None and outcome.retired == ()
    assert (await answers(store)).events == before.events
    assert await archived_month_usage(store, MONTHS[0]) == {}
