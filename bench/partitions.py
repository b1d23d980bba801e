"""Partitions: migration 0010 on a populated table, a month split out of the default, a month retired.

The bench creates a PostgreSQL database of its own (dropped at the end), migrates it to the version
before ``events_by_month``, fills ``events`` with N synthetic events (``INSERT ... SELECT`` from
``generate_series``: N/10 instances, each a create and nine resizes a month apart from January 2025,
so every month holds about a tenth of the table and most resources), then times:

- ``migrate``: migration 0010, the in-place conversion (rows moved, indexes built again);
- ``split``: one upkeep round that makes a month whose rows sat in ``events_default`` (N/100 rows);
- ``retire``: one retention round that retires the oldest month (usage archive, snapshots, detach).

Printed: a row per step (seconds, rows, rows/s) and ``RATIO`` lines. ``--quick`` (CI) fills 20,000
events and checks only that every step ran and the rows add up.

    .venv/bin/python -m bench.partitions [--quick] [--events N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from datetime import UTC, datetime

import psycopg

from bench.scratch_db import scratch_database
from tally.store import RetentionPolicy, maintain_events, open_store
from tally.store._migrations import load_migrations

ADMIN_URL = os.environ.get("TALLY_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
NOW = datetime(2026, 1, 15, tzinfo=UTC)  # the retention round's "now": keeps Feb 2025 on, retires Jan

_FILL = """
INSERT INTO events (event_id, timestamp, received_at, event_type, platform, cloud, resource_type,
                    resource_id, project_id, source, payload)
SELECT 'ev-' || i,
       timestamptz '2025-01-01 00:00:00+00' + ((i / 10) % 600) * interval '1 hour'
           + (i % 10) * interval '31 days',
       timestamptz '2026-01-01 00:00:00+00' + i * interval '1 millisecond',
       CASE WHEN i % 10 = 0 THEN 'compute.instance.create.end' ELSE 'compute.instance.resize.end' END,
       'openstack', 'os-bench', 'instance', 'vm-' || (i / 10), 'p-' || ((i / 10) % 50), 'collector',
       jsonb_build_object('state', 'active', 'size', jsonb_build_object(
           'vcpus', 1 + i % 4, 'ram_gb', 2 * (1 + i % 4), 'disk_gb', 20, 'flavor', 'f' || (i % 4)))
FROM generate_series(0, %s - 1) AS i
"""


def _before_partitioning() -> int:
    return next(m.version for m in load_migrations("postgresql") if m.name == "events_by_month") - 1


async def run(url: str, events: int) -> dict[str, tuple[float, int]]:
    timings: dict[str, tuple[float, int]] = {}
    async with open_store(url) as store:
        await store.migrate_up()
        await store.migrate_down(_before_partitioning())
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(_FILL.replace("%s", str(int(events))))
            conn.execute("ANALYZE events")

        started = time.perf_counter()
        await store.migrate_up()
        timings["migrate"] = (time.perf_counter() - started, events)

        # Rows dated in a month no partition covers yet (December 2031) land in the default partition.
        strays = max(1, events // 100)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                _FILL.replace("%s", str(strays))
                .replace("'ev-' || i", "'stray-' || i")
                .replace("timestamptz '2025-01-01 00:00:00+00'", "timestamptz '2031-12-01 00:00:00+00'")
                .replace("(i % 10) * interval '31 days'", "interval '0 days'")
            )
        started = time.perf_counter()
        split = await maintain_events(
            store, ahead=0, policy=RetentionPolicy(), now=datetime(2031, 12, 5, tzinfo=UTC)
        )
        timings["split"] = (time.perf_counter() - started, split.ensured.moved_rows if split else 0)

        started = time.perf_counter()
        retired = await maintain_events(store, ahead=0, policy=RetentionPolicy(months=11), now=NOW)
        elapsed = time.perf_counter() - started
        assert retired is not None and retired.refused is None, retired
        timings["retire"] = (elapsed, sum(r.events for r in retired.retired))
        timings["snapshots"] = (elapsed, sum(r.snapshots for r in retired.retired))
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small database, for CI")
    parser.add_argument("--events", type=int, default=None, help="events to fill (default 1,000,000)")
    args = parser.parse_args()
    events = args.events or (20_000 if args.quick else 1_000_000)
    with scratch_database(ADMIN_URL, "tally_bench_partitions") as (_, url):
        timings = asyncio.run(run(url, events))
    print(f"{'step':<10} {'seconds':>9} {'rows':>10} {'rows/s':>10}")
    for step, (seconds, rows) in timings.items():
        print(f"{step:<10} {seconds:>9.2f} {rows:>10} {rows / seconds if seconds else 0:>10.0f}")
    print(f"RATIO partitions_migrate_events_per_s={events / timings['migrate'][0]:.0f}")
    print(f"RATIO partitions_split_s={timings['split'][0]:.3f}")
    print(f"RATIO partitions_retire_month_s={timings['retire'][0]:.2f}")
    print(f"RATIO partitions_retire_events_per_s={timings['retire'][1] / timings['retire'][0]:.0f}")
    ok = timings["split"][1] == max(1, events // 100) and timings["retire"][1] > 0
    if not ok:
        print("partitions: a step did not do its work", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
