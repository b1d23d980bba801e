"""The database's own work per stored event: the ingest path against COPY, and the indexes' share.

Issue 27 asks for ingest at half COPY's speed and for a first sync of 250,000 resources within half its
budget. Both wait on PostgreSQL's backend as much as on our Python, so this bench measures the backend
alone: the CPU seconds of the one backend process serving the store's one connection (read from
``/proc``, so the server must run on this host), per event stored.

The events are a first sync's corrections: creates of distinct resources (``sync.create``, source
``reconciliation``, the payload a booking writes), dated before the migrated months so that they land
in ``events_default`` as a first sync's do. Each path stores them in batches of ``--batch`` (the
booking's 250) on a fresh scratch database, migrated, after a warm-up of other resources outside the
clock:

- ``ingest``: the store's batch (``Store.write_batch``: the key locks, the row read, the event insert,
  the projection upsert, the commit), with the schema as migrated;
- ``ingest, events' secondary indexes dropped``: the same, after ``DROP INDEX`` of the six
  indexes of ``events`` other than its primary key;
- ``ingest, projection's secondary indexes dropped``: the same, after ``DROP INDEX`` of the three
  indexes of ``current_resources`` other than its primary key;
- ``event insert alone``: only the path's statement that stores the events (``INSERT ... SELECT FROM
  unnest(...) ON CONFLICT DO NOTHING RETURNING``, the store's own text and array literals), a
  transaction per batch, schema as migrated: the rest of ``ingest`` is the projection's share (the key
  locks, the row read, the upsert) and the larger commit;
- ``COPY``: the same event rows copied into ``events`` as migrated (the ingest bench's floor), without
  a projection.

The variants without indexes are experiments, not proposals: they say what each table's indexes cost
the write path, which is what a change of schema would have to weigh against the reads they serve.
The paths alternate round by round (the order reversed every other round) and the medians are
printed, with ``RATIO`` lines of each path's backend CPU per event against COPY's. The run exits 1
when the ingest path's backend costs more than ``--ceiling`` times COPY's per event (``CEILING``): a
statement added to the batch's transaction, or one made to work per row where it worked per batch,
fails it. ``--quick`` (CI) stores 10,000 events in one round.

    .venv/bin/python -m bench.rowcost [--quick] [--events N] [--rounds R] [--batch B] [--ceiling X]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import orjson
import psycopg

from bench.procstat import cpu_seconds
from bench.scratch_db import scratch_database
from tally.cli import tune_garbage_collector
from tally.core import Event, format_instant, parse_event
from tally.store import open_store
from tally.store._pg_arrays import event_columns
from tally.store._pg_batch import INSERT_EVENTS
from tally.store._sql_text import EVENT_SELECT

PG_ADMIN = os.environ.get("TALLY_BENCH_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
WARMUP = 1000
# The ingest path's backend CPU per event over COPY's, at most: measured 2.5-3.6 (docs/benchmarks.md,
# rowcost), so a path twice as costly for the database fails.
CEILING = 5.0
EVENT_INDEXES = (
    "events_resource_idx",
    "events_project_idx",
    "events_type_idx",
    "events_timestamp_idx",
    "events_scope_idx",
    "events_received_idx",
)
PROJECTION_INDEXES = (
    "current_resources_project_idx",
    "current_resources_type_state_idx",
    "current_resources_live_idx",
)


def drop(indexes: Sequence[str]) -> tuple[str, ...]:
    return tuple(f"DROP INDEX {index}" for index in indexes)


# A batch written by a statement of its own (COPY, the event insert), on its connection, received at.
WriteBatch = Callable[[psycopg.AsyncConnection[Any], Sequence[Event], datetime], Awaitable[None]]
# A path's measure: (url, events, warm-up, batch size) to (wall seconds, the backend's CPU seconds).
Measure = Callable[[str, list[Event], list[Event], int], Awaitable[tuple[float, float]]]


@dataclass(frozen=True, slots=True)
class WritePath:
    """One way of storing the events: its label, its ``RATIO`` line's name, how it is measured."""

    label: str
    ratio: str
    measure: Measure


def corrections(count: int, first: int = 0) -> list[Event]:
    """Creates of ``count`` distinct resources shaped as a first sync books them: random ids (a cloud's
    UUIDs, the synthetic ids' hashes) and instants scattered over a year, so that every index takes its
    entries at random places as a first sync's do, not at the right-most page."""
    base = datetime(2025, 1, 1, tzinfo=UTC)
    rng = random.Random(first)
    run = str(uuid.UUID(int=rng.getrandbits(128)))
    events = []
    for n in range(first, first + count):
        kind = ("instance", "volume", "floating_ip")[n % 3]
        wire = {
            "event_id": f"sync:{uuid.UUID(int=rng.getrandbits(128))}",
            "timestamp": format_instant(base + timedelta(seconds=rng.randrange(365 * 86400))),
            "event_type": "sync.create",
            "platform": "openstack",
            "cloud": "os-bench",
            "resource_type": kind,
            "resource_id": str(uuid.UUID(int=rng.getrandbits(128))),
            "project_id": f"p-{n % 200:04d}",
            "source": "reconciliation",
            "payload": {
                "state": "active",
                "size": {"vcpus": 1 + n % 4, "ram_gb": 2 * (1 + n % 4), "flavor": f"m1.f{n % 4}"},
                "provider": {"reason": "missed_create", "sync_run_id": run},
            },
        }
        events.append(parse_event(wire, source="reconciliation"))
    return events


async def backend_cost(pid: int, work: Callable[[], Awaitable[None]]) -> tuple[float, float]:
    """Wall seconds of ``work`` and the CPU seconds backend ``pid`` spent meanwhile."""
    cpu, began = cpu_seconds(pid), time.perf_counter()
    await work()
    return time.perf_counter() - began, cpu_seconds(pid) - cpu


async def ingest_cost(
    ddl: Sequence[str], url: str, events: list[Event], warm: list[Event], batch: int
) -> tuple[float, float]:
    """The store's batch, after ``ddl`` on the migrated database."""
    async with open_store(url, max_conns=1) as store:
        await store.migrate_up()
        with psycopg.connect(url, autocommit=True) as conn:
            for statement in ddl:
                conn.execute(statement)

        async def write(items: list[Event]) -> None:
            for start in range(0, len(items), batch):
                await store.write_batch(items[start : start + batch])

        await write(warm)
        async with store.seam._pool.connection() as conn:  # type: ignore[attr-defined]
            pid = conn.info.backend_pid
        return await backend_cost(pid, lambda: write(events))


def copy_row(event: Event, at: datetime) -> tuple[Any, ...]:
    return (
        event.event_id,
        event.timestamp,
        at,
        event.event_type,
        event.platform,
        event.cloud,
        event.resource_type,
        event.resource_id,
        event.project_id,
        event.source,
        orjson.dumps(event.payload).decode(),
    )


async def copy_batch(conn: psycopg.AsyncConnection[Any], items: Sequence[Event], at: datetime) -> None:
    async with (
        conn.transaction(),
        conn.cursor() as cur,
        cur.copy(f"COPY events ({EVENT_SELECT}) FROM STDIN") as copy,
    ):
        for event in items:
            await copy.write_row(copy_row(event, at))


async def insert_batch(conn: psycopg.AsyncConnection[Any], items: Sequence[Event], at: datetime) -> None:
    async with conn.transaction():
        columns = event_columns(items)
        await (await conn.execute(INSERT_EVENTS, [at, *columns], binary=True)).fetchall()


async def statement_cost(
    write: WriteBatch, url: str, events: list[Event], warm: list[Event], batch: int
) -> tuple[float, float]:
    """``write`` on a connection of its own to the migrated database, a batch at a time."""
    async with open_store(url) as store:
        await store.migrate_up()
    at = datetime.now(UTC)
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:

        async def write_all(items: list[Event]) -> None:
            for start in range(0, len(items), batch):
                await write(conn, items[start : start + batch], at)

        await write_all(warm)
        return await backend_cost(conn.info.backend_pid, lambda: write_all(events))


PATHS = (
    WritePath("ingest", "ingest", partial(ingest_cost, ())),
    WritePath(
        "ingest, events' secondary indexes dropped",
        "ingest_events_pk_only",
        partial(ingest_cost, drop(EVENT_INDEXES)),
    ),
    WritePath(
        "ingest, projection's secondary indexes dropped",
        "ingest_projection_pk_only",
        partial(ingest_cost, drop(PROJECTION_INDEXES)),
    ),
    WritePath("event insert alone", "event_insert", partial(statement_cost, insert_batch)),
    WritePath("COPY", "copy", partial(statement_cost, copy_batch)),
)
INGEST, COPY = PATHS[0], PATHS[-1]


async def measure(path: WritePath, events: list[Event], warm: list[Event], batch: int) -> tuple[float, float]:
    with scratch_database(PG_ADMIN, "tally_bench_rowcost") as (_, url):
        return await path.measure(url, events, warm, batch)


async def main(args: argparse.Namespace) -> int:
    events = corrections(args.events)
    warm = corrections(WARMUP, first=args.events)
    costs: dict[WritePath, list[float]] = {path: [] for path in PATHS}
    print(f"rowcost: {args.events} events, batches of {args.batch}, {args.rounds} round(s), load {load()}")
    print(f"{'round':>5}  {'path':<48} {'seconds':>8} {'backend us/ev':>14}")
    for round_ in range(1, args.rounds + 1):
        for path in PATHS if round_ % 2 else reversed(PATHS):
            seconds, cpu = await measure(path, events, warm, args.batch)
            costs[path].append(cpu / len(events) * 1e6)
            print(f"{round_:>5}  {path.label:<48} {seconds:>8.2f} {costs[path][-1]:>14.1f}", flush=True)
    medians = {path: statistics.median(costs[path]) for path in PATHS}
    floor = medians[COPY]
    print("medians: backend CPU per event (us), and against COPY's")
    for path, cost in medians.items():
        print(f"  {path.label:<48} {cost:>7.1f}  {cost / floor:>5.2f} x")
    for path, cost in medians.items():
        if path is not COPY:
            print(f"RATIO rowcost_{path.ratio}_backend_vs_copy={cost / floor:.2f}")
    print(f"RATIO rowcost_copy_backend_us_per_event={floor:.1f}")
    print(f"load {load()} at the end")
    ratio = medians[INGEST] / floor
    if ratio > args.ceiling:
        print(f"TARGET MISSED: the ingest path's backend at {ratio:.2f} x COPY's, above {args.ceiling}")
        return 1
    return 0


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def cli() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="10,000 events, one round")
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch", type=int, default=250, help="events a transaction (the booking's 250)")
    parser.add_argument(
        "--ceiling",
        type=float,
        default=CEILING,
        help=f"fail above this ingest/COPY ratio of the backend's CPU (default {CEILING})",
    )
    args = parser.parse_args()
    if args.quick:
        args.events, args.rounds = 10_000, 1
    tune_garbage_collector()
    return anyio.run(main, args)


if __name__ == "__main__":
    raise SystemExit(cli())
