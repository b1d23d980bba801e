"""A year of a large cloud on PostgreSQL: how ingest, reads, usage, sync, disk and vacuum grow with events.

The bench creates a database of its own (dropped at the end), migrates it with the store's migrations
(so it runs on whichever ``events`` schema ``tally migrate`` creates, one heap or partitions, and says
which) and fills it with a synthetic stream of the collector's shape: a year (November 2025 to October
2026, so that no usage is asked of the future) of one cloud (``os-bench``) whose live population ramps
up to ``--live`` resources (250,000; ``--quick`` 10,000) and then churns, each event a create (12 %), a
delete (12 % at the target population) or an update, with the collector's stored event types and
payloads (``state``, ``size``, ``provider``): instances 40 % of the creates (power off/on, resizes),
volumes 40 % (attach, detach, grow), floating IPs 12 %, images 6 %, load balancers 2 %, over 2,000
projects, random oslo message ids, received 1.5 s after their timestamp. The bulk of it goes in by
``COPY`` into ``events`` (on the partitioned schema, into the months the daemon's upkeep makes ahead
as the year goes by: ``maintain_events`` at each month of the stream, so that the year is not one
default partition), and the projection rows of the resources it touched by ``COPY`` into
``current_resources`` (the rows the fold gives; checked against ``project()`` of the stored history for
a sample of resources at every checkpoint, which fails the run on a difference).

At each checkpoint (1M, 5M, 10M, 20M events; ``--quick`` 50k and 200k; ``--max-events`` caps them):
- ``VACUUM events`` and ``ANALYZE events``, each timed (autovacuum may be off on a shared server);
- sustained ingest: the stream's next ``--sample`` events (100,000; quick 5,000) through
  ``POST /api/v1/events`` in batches of 500 from a separate client process (``bench.ingest``'s path);
- ``GET /api/v1/resources/{key}/lifecycle`` of random resources and ``GET /api/v1/events`` pages of 100
  from random instants (``cloud`` filter), one request at a time against the Reporting API served as
  ``bench.reads`` serves it: p50 and p99;
- the usage of the 30 days up to the stream's instant, exported as CSV (``bench.usage``'s export);
- a sync of ``bench.sync``'s fake cloud (250,000 resources; quick 500) into a second cloud: the first
  checkpoint runs the first sync (all creates) and then every checkpoint a steady one;
- disk per million events: ``events`` with its indexes (every partition), from ``pg_partition_tree``.

Prints a row per checkpoint as it is measured, the growth table at the end and ``RATIO`` lines of the
largest checkpoint against the first; Ctrl-C (SIGINT) drops the database and reports the checkpoints
measured so far. Exits 1 when a check fails (a refused event, a sync that does not complete, a
projection row unlike its history's fold).

    nice .venv/bin/python -m bench.scale [--quick] [--max-events N] [--live N] [--sample N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import psycopg

from bench import sync as sync_bench
from bench.ingest import ingest_over_http
from bench.reads import Servers
from bench.scale_stream import YEAR0, Stream
from bench.scratch_db import scratch_database
from bench.usage import CLOUD, TOKEN, export_round
from tally.cli import tune_garbage_collector
from tally.config import Settings
from tally.core import ResourceKey, format_instant, project
from tally.store import RetentionPolicy, hash_secret, maintain_events, open_store
from tally.store._partitions import add_months
from tally.store._sql_text import EVENT_SELECT

PG_ADMIN = os.environ.get("TALLY_BENCH_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
SYNC_CLOUD = "os-sync"
ROW_COLUMNS = "cloud, platform, resource_type, resource_id, project_id, state, size, created_at, deleted_at, "
ROW_COLUMNS += "last_event_type, last_event_at, last_payload, first_event_at, last_received_at, last_event_id"


# -- the database --------------------------------------------------------------------------------------
async def copy_events(conn: psycopg.AsyncConnection[Any], stream: Stream, count: int) -> None:
    """``count`` events of the stream by COPY, in transactions of 50,000."""
    left = count
    while left > 0:
        n = min(left, 50_000)
        lines = "".join(stream.next().copy_line() for _ in range(n))
        async with (
            conn.transaction(),
            conn.cursor() as cur,
            cur.copy(f"COPY events ({EVENT_SELECT}) FROM STDIN") as copy,
        ):
            await copy.write(lines.encode())
        left -= n


async def flush_projection(conn: psycopg.AsyncConnection[Any], stream: Stream) -> None:
    """Replace the projection rows of every resource the bulk touched since the last flush."""
    rows = list(stream.touched.values())
    stream.touched.clear()
    if not rows:
        return
    async with conn.transaction(), conn.cursor() as cur:
        await cur.execute("CREATE TEMP TABLE flushed (resource_type TEXT, resource_id TEXT) ON COMMIT DROP")
        async with cur.copy("COPY flushed (resource_type, resource_id) FROM STDIN") as copy:
            await copy.write("".join(f"{r.rtype}\t{r.rid}\n" for r in rows).encode())
        await cur.execute(
            "DELETE FROM current_resources c USING flushed f WHERE c.cloud = %s "
            "AND c.resource_type = f.resource_type AND c.resource_id = f.resource_id",
            [CLOUD],
        )
        async with cur.copy(f"COPY current_resources ({ROW_COLUMNS}) FROM STDIN") as copy:
            await copy.write("".join(r.copy_row() for r in rows).encode())


async def timed_sql(url: str, sql: str) -> float:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        began = time.perf_counter()
        await conn.execute(sql)
        return time.perf_counter() - began


async def schema_of(url: str) -> str:
    """How ``events`` is stored: one heap or partitioned (with its partition count), its indexes."""
    async with await psycopg.AsyncConnection.connect(url) as conn:
        kind, parts = await (
            await conn.execute(
                "SELECT c.relkind, (SELECT count(*) FROM pg_inherits WHERE inhparent = c.oid) "
                "FROM pg_class c WHERE c.oid = 'events'::regclass"
            )
        ).fetchone() or ("?", 0)
        indexes = await (
            await conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'events' ORDER BY indexname"
            )
        ).fetchall()
    shape = f"partitioned ({parts} partitions)" if kind == "p" else "one table"
    return f"events: {shape}; indexes {', '.join(r[0] for r in indexes)}"


async def disk_of(url: str) -> tuple[int, int, int]:
    """(rows, table bytes, index bytes) of ``events``, every partition counted."""
    async with await psycopg.AsyncConnection.connect(url) as conn:
        count = (await (await conn.execute("SELECT count(*) FROM events")).fetchone() or (0,))[0]
        # pg_partition_tree has no rows for a plain table, hence the table itself in the union.
        table, indexes = await (
            await conn.execute(
                "SELECT sum(pg_table_size(r)), sum(pg_indexes_size(r)) FROM "
                "(SELECT relid AS r FROM pg_partition_tree('events') UNION SELECT 'events'::regclass) t"
            )
        ).fetchone() or (0, 0)
    return int(count), int(table), int(indexes)


async def check_projection(url: str, stream: Stream, keys: int) -> None:
    """The stored row of a sample of resources is what ``project()`` folds from their stored history."""
    async with open_store(url) as store:
        for r in stream.rng.sample(stream.sample, min(keys, len(stream.sample))):
            key = ResourceKey(CLOUD, r.rtype, r.rid)
            row, folded = await store.get_resource(key), project(await store.resource_history(key))
            if row != folded:
                raise SystemExit(
                    f"bench.scale: the projection row of {key} is not its history's fold:\n"
                    f"stored {row}\nfolded {folded}"
                )


# -- the measurements ----------------------------------------------------------------------------------
def latencies(port: int, paths: list[str]) -> tuple[float, float]:
    """(p50, p99) in ms of ``paths`` requested one after the other; any answer but 200 fails the run."""
    took = []
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120, headers=headers) as client:
        client.get(paths[0])  # the first request pays for what the app builds lazily
        for path in paths:
            began = time.perf_counter()
            answer = client.get(path)
            took.append((time.perf_counter() - began) * 1000)
            if answer.status_code != 200:
                raise SystemExit(f"bench.scale: {path} answered {answer.status_code}: {answer.text[:200]}")
    took.sort()
    return statistics.median(took), took[min(len(took) - 1, int(len(took) * 0.99))]


@dataclass
class Checkpoint:
    events: int
    vacuum_s: float
    analyze_s: float
    ingest_per_s: float
    lifecycle_ms: tuple[float, float]
    page_ms: tuple[float, float]
    usage_s: float
    usage_rows: int
    sync_s: float
    table_bytes: int
    index_bytes: int

    @property
    def mib_per_million(self) -> float:
        return (self.table_bytes + self.index_bytes) / 2**20 / (self.events / 1e6)


HEADER = (
    f"{'events':>11}{'vacuum s':>9}{'analyze s':>10}{'ingest/s':>9}{'lifecycle p50/p99 ms':>21}"
    f"{'page p50/p99 ms':>16}{'usage s':>8}{'usage rows':>11}{'sync s':>7}{'MiB/M ev':>9}"
    f"{'table GiB':>10}{'index GiB':>10}{'load':>5}"
)


def row_text(c: Checkpoint) -> str:
    return (
        f"{c.events:>11,}{c.vacuum_s:>9.1f}{c.analyze_s:>10.1f}{c.ingest_per_s:>9,.0f}"
        f"{c.lifecycle_ms[0]:>11.1f}/{c.lifecycle_ms[1]:<9.1f}{c.page_ms[0]:>7.1f}/{c.page_ms[1]:<8.1f}"
        f"{c.usage_s:>8.1f}{c.usage_rows:>11,}{c.sync_s:>7.1f}{c.mib_per_million:>9.0f}"
        f"{c.table_bytes / 2**30:>10.2f}{c.index_bytes / 2**30:>10.2f}{os.getloadavg()[0]:>5.1f}"
    )


# -- the orchestration ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sizes:
    checkpoints: list[int]
    live: int
    sample: int
    requests: int
    sync_scale: float
    checked_keys: int


def sizes(args: argparse.Namespace) -> Sizes:
    marks = [50_000, 200_000] if args.quick else [1_000_000, 5_000_000, 10_000_000, 20_000_000]
    top = args.max_events or marks[-1]
    sample = args.sample or (5_000 if args.quick else 100_000)
    checkpoints = [m for m in marks if m < top] + [top]
    if checkpoints[0] <= sample:
        raise SystemExit(f"bench.scale: --max-events {top} leaves no room for a sample of {sample} events")
    return Sizes(
        checkpoints,
        args.live or (10_000 if args.quick else 250_000),
        sample,
        40 if args.quick else 300,
        0.002 if args.quick else 1.0,
        50 if args.quick else 200,
    )


def say(text: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S} load {os.getloadavg()[0]:.1f}] {text}", flush=True)


async def fill_to(url: str, stream: Stream, count: int) -> None:
    """Bulk-load the stream up to ``count`` events, flushing the projection every million."""
    async with await psycopg.AsyncConnection.connect(url) as conn:
        while stream.count < count:
            began, start = time.perf_counter(), stream.count
            await copy_events(conn, stream, min(1_000_000, count - stream.count))
            await flush_projection(conn, stream)
            rate = (stream.count - start) / (time.perf_counter() - began)
            say(f"bulk {stream.count:,} events ({rate:,.0f}/s, {stream.live_count:,} live resources)")


async def sync_once(base: str, env: dict[str, str], url: str, at: datetime) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=30) as client:
        (await client.put(f"{base}/bench/at", json={"at": at.isoformat()})).raise_for_status()
    done = await anyio.to_thread.run_sync(sync_bench.child, ["sync", url, at.isoformat(), SYNC_CLOUD], env)
    if done["status"] != "completed":
        raise SystemExit(f"bench.scale: the sync at {at} ended {done['status']}: {done['stats']}")
    return done


async def checkpoint(url: str, stream: Stream, size: Sizes, port: int, sync: Any) -> Checkpoint:
    vacuum_s = await timed_sql(url, "VACUUM events")
    analyze_s = await timed_sql(url, "ANALYZE events")
    await timed_sql(url, "VACUUM ANALYZE current_resources")
    say(f"vacuum {vacuum_s:.1f} s, analyze {analyze_s:.1f} s")
    events = [stream.next().wire() for _ in range(size.sample)]
    stream.touched.clear()  # the ingest path folds these itself
    async with open_store(url, max_conns=1) as store:
        seconds, _ = await ingest_over_http(store, url, events)
    say(f"ingest {len(events):,} events in {seconds:.1f} s")
    rng = stream.rng
    lifecycle = [
        f"/api/v1/resources/{CLOUD}/{r.rtype}/{r.rid}/lifecycle"
        for r in rng.sample(stream.sample, min(size.requests, len(stream.sample)))
    ]
    span = int((stream.now() - YEAR0).total_seconds())
    starts = [format_instant(YEAR0 + timedelta(seconds=rng.randrange(span))) for _ in range(size.requests)]
    pages = [f"/api/v1/events?cloud={CLOUD}&limit=100&from={start}" for start in starts]
    lifecycle_ms, page_ms = latencies(port, lifecycle), latencies(port, pages)
    say(f"lifecycle p99 {lifecycle_ms[1]:.1f} ms, events page p99 {page_ms[1]:.1f} ms")
    now = stream.now()
    usage = await export_round(url, now - timedelta(days=30), now)
    say(f"usage of the 30 days to {format_instant(now)}: {usage['rows']:,} rows in {usage['seconds']:.1f} s")
    synced = await sync()
    say(f"steady sync {synced['seconds']:.1f} s: {synced['stats']}")
    count, table, indexes = await disk_of(url)
    await check_projection(url, stream, size.checked_keys)
    return Checkpoint(
        count,
        vacuum_s,
        analyze_s,
        len(events) / seconds,
        lifecycle_ms,
        page_ms,
        usage["seconds"],
        usage["rows"],
        synced["seconds"],
        table,
        indexes,
    )


def report(rows: list[Checkpoint]) -> None:
    print("growth (each checkpoint; the last line: the largest over the first):")
    print(HEADER)
    for c in rows:
        print(row_text(c))
    first, last = rows[0], rows[-1]
    growth = {
        "events": last.events / first.events,
        "vacuum_s": last.vacuum_s / first.vacuum_s,
        "analyze_s": last.analyze_s / first.analyze_s,
        "ingest_per_s": last.ingest_per_s / first.ingest_per_s,
        "lifecycle_p99": last.lifecycle_ms[1] / first.lifecycle_ms[1],
        "page_p99": last.page_ms[1] / first.page_ms[1],
        "usage_s": last.usage_s / first.usage_s,
        "sync_s": last.sync_s / first.sync_s,
        "mib_per_million": last.mib_per_million / first.mib_per_million,
    }
    print("  x " + "  ".join(f"{k} {v:.2f}" for k, v in growth.items()))
    for name, value in growth.items():
        print(f"RATIO scale_{name}_growth={value:.3f}")
    print(f"RATIO scale_ingest_per_s_at_max={last.ingest_per_s:.0f}")
    print(f"RATIO scale_lifecycle_p99_ms_at_max={last.lifecycle_ms[1]:.1f}")
    print(f"RATIO scale_events_page_p99_ms_at_max={last.page_ms[1]:.1f}")
    print(f"RATIO scale_usage_s_at_max={last.usage_s:.2f}")
    print(f"RATIO scale_sync_s_at_max={last.sync_s:.2f}")
    print(f"RATIO scale_mib_per_million_events_at_max={last.mib_per_million:.0f}")


async def run(size: Sizes, rows: list[Checkpoint]) -> None:
    """Measure every checkpoint into ``rows`` (the caller's, so that an interrupted run keeps them)."""
    servers = Servers()
    with scratch_database(PG_ADMIN, "tally_bench_scale") as (name, url):
        try:
            async with open_store(url) as store:
                await store.migrate_up()
                status = await store.schema_status()
                await store.create_api_token(token_hash=hash_secret(TOKEN), role="read_all")
                # The months the daemon's upkeep makes ahead as the year goes by; without them every row
                # of the year would land in the default partition.
                for month in range(13):
                    await maintain_events(
                        store,
                        ahead=Settings().events_partitions_ahead,
                        policy=RetentionPolicy(),
                        now=add_months(YEAR0, month),
                    )
            say(f"database {name}, schema version {status.current}; {await schema_of(url)}")
            stream = Stream(size.checkpoints[-1], size.live)
            with tempfile.TemporaryDirectory(prefix="tally-bench-scale-") as tmp:
                fake, base, env = sync_bench.start_fake_cloud(size.sync_scale, Path(tmp))
                try:
                    servers.start("api", url)
                    steady = iter(sync_bench.T1 + timedelta(minutes=2 * k) for k in range(1, 100))
                    first = await sync_once(base, env, url, sync_bench.T1)
                    say(f"first sync (all creates) {first['seconds']:.1f} s: {first['stats']}")
                    for mark in size.checkpoints:
                        await fill_to(url, stream, mark - size.sample)
                        rows.append(
                            await checkpoint(
                                url,
                                stream,
                                size,
                                servers.ports["api"],
                                lambda: sync_once(base, env, url, next(steady)),
                            )
                        )
                        print(HEADER, flush=True)
                        print(row_text(rows[-1]), flush=True)
                finally:
                    fake.terminate()
                    fake.wait(timeout=30)
            say(f"schema after the run: {await schema_of(url)}")
        finally:
            servers.stop()
    print(f"first sync of {SYNC_CLOUD} (all creates): {first['seconds']:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="200,000 events, checkpoints 50k and 200k (CI)")
    parser.add_argument("--max-events", type=int, default=0, help="the last checkpoint (default 20,000,000)")
    parser.add_argument("--live", type=int, default=0, help="live resources (default 250,000; quick 10,000)")
    parser.add_argument("--sample", type=int, default=0, help="events ingested per checkpoint (100,000)")
    args = parser.parse_args()
    size = sizes(args)
    say(
        f"scale benchmark: checkpoints {size.checkpoints}, {size.live:,} live resources, "
        f"{size.sample:,} events ingested per checkpoint, sync scale {size.sync_scale:g}"
    )
    tune_garbage_collector()  # the ingest server runs in this process, as under `tally run`
    began = time.perf_counter()
    rows: list[Checkpoint] = []
    try:
        anyio.run(run, size, rows)
    except KeyboardInterrupt:
        # A full run takes hours on a shared host: Ctrl-C still drops the database and reports the
        # checkpoints measured so far.
        say(f"interrupted after {len(rows)} checkpoint(s)")
        if not rows:
            raise
    report(rows)
    say(f"done in {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
