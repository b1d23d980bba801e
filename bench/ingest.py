"""Ingest throughput: events/s through ``POST /api/v1/events`` in batches of 500, projection included.

For each backend (PostgreSQL, SQLite) the same rows are measured two ways, in rounds
(``--rounds``, default 3: floor then ingest, each on fresh tables that first take ``WARMUP`` events
of other resources the same way, outside the clock), and the
medians over the rounds are reported (the machine's speed drifts from minute to
minute; a floor and an ingest measured back to back share the drift):
- ``ingest``: the Reporting API app served by Hypercorn on a loopback port, a
  separate client process (httpx) posting batches of 500 one after another with
  an ingest credential (validation, schema check, dedup, projection fold, one
  transaction per batch);
- ``floor``: a bare bulk insert of the same rows into an identical ``events``
  table (COPY for PostgreSQL, executemany for SQLite), 500 rows per transaction.

``--via pipeline`` calls ``IngestPipeline.ingest`` directly instead of HTTP.
The server side runs under the daemon's garbage-collector policy
(``tally.cli.tune_garbage_collector``), as `tally run` applies it.
Prints a row per round and path, and ``RATIO`` lines of the medians; exits 1 when PostgreSQL's
ratio is below ``--floor`` (by default the target, 0.5; ``--quick``, the CI mode with a few thousand
events, holds a lower regression floor, see ``QUICK_FLOOR_PG``).

    .venv/bin/python -m bench.ingest [--quick] [--events N] [--rounds R] [--via http|pipeline]
                                     [--backends pg,sqlite] [--floor RATIO]
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import orjson
import psycopg

from bench.procstat import cpu_seconds
from bench.scratch_db import scratch_database
from tally.app import ingest_pipeline
from tally.cli import tune_garbage_collector
from tally.config import Settings
from tally.core import format_instant
from tally.http import ReportingServices, create_reporting_app, serve_quart
from tally.store import Store, hash_secret, open_store
from tally.store._sql_text import EVENT_COLUMNS, EVENT_SELECT

BATCH = 500
# Batches posted (and copied) before each round's clock starts: the round's fresh server, store
# connection and statements pay their first-use costs there, which in a quick run of four batches were
# most of a round's wall (docs/benchmarks.md, ingest).
WARMUP = 2 * BATCH
PG_ADMIN = os.environ.get("TALLY_BENCH_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


def make_events(count: int, *, first: int = 0) -> list[dict[str, Any]]:
    """Instances with a create and four updates each, interleaved in time like a busy cloud; ``first``
    numbers the first resource (the warm-up's resources follow the measured ones)."""
    base = datetime(2026, 3, 1, tzinfo=UTC)
    events: list[tuple[datetime, dict[str, Any]]] = []
    resources = max(1, count // 5)
    for r in range(first, first + resources):
        for k in range(5):
            if len(events) >= count:
                break
            at = base + timedelta(seconds=r * 2 + k * 600)
            size = {"vcpus": 1 + r % 4, "ram_gb": 2 * (1 + r % 4), "disk_gb": 20, "flavor": f"m1.f{r % 4}"}
            payload: dict[str, Any] = {
                "state": "active" if k % 2 == 0 else "shutoff",
                "provider": {"oslo_event_type": "compute.instance.update"},
            }
            if k == 0:
                payload["size"] = size
            events.append(
                (
                    at,
                    {
                        "event_id": str(uuid.UUID(int=r * 8 + k + 1)),
                        "timestamp": format_instant(at),
                        "event_type": "compute.instance.create.end" if k == 0 else "compute.instance.update",
                        "platform": "openstack",
                        "cloud": "os-bench",
                        "resource_type": "instance",
                        "resource_id": f"vm-{r:07d}",
                        "project_id": f"p-{r % 50}",
                        "payload": payload,
                    },
                )
            )
    events.sort(key=lambda pair: pair[0])
    return [e for _, e in events]


def batches(items: list[Any]) -> list[list[Any]]:
    return [items[i : i + BATCH] for i in range(0, len(items), BATCH)]


def floor_rows(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    now = datetime.now(UTC)
    return [
        (
            e["event_id"],
            datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")),
            now,
            e["event_type"],
            e["platform"],
            e["cloud"],
            e["resource_type"],
            e["resource_id"],
            e["project_id"],
            "collector",
            orjson.dumps(e["payload"]).decode(),
        )
        for e in events
    ]


async def timed(fn: Callable[[], Awaitable[None]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


async def post_bodies(port: int, secret: str, bodies: Path) -> tuple[float, float]:
    """Run the client process over a file of bodies: its wall seconds and CPU seconds posting them."""
    client = await anyio.run_process(
        [sys.executable, "-c", CLIENT, f"http://127.0.0.1:{port}", str(bodies)],
        env={**os.environ, "TALLY_BENCH_TOKEN": secret},
        check=False,
    )
    if client.returncode != 0:
        raise RuntimeError(f"bench client failed: {client.stderr.decode()[-2000:]}")
    seconds, cpu = client.stdout.decode().strip().splitlines()[-1].split()
    return float(seconds), float(cpu)


async def ingest_over_http(
    store: Store,
    url: str,
    events: list[dict[str, Any]],
    warm: list[dict[str, Any]] | None = None,
    start: Callable[[], None] = lambda: None,
) -> tuple[float, float]:
    """Serve the app here; post from a separate client process, as a remote collector would (the
    client's HTTP work then runs on the other core instead of sharing the server's event loop). A
    first client posts the ``warm`` batches, if any (``bench.scale`` has none); ``start`` is called
    before the measured one starts."""
    secret = secrets.token_urlsafe(24)
    await store.create_ingest_credential(
        platform="openstack", cloud="os-bench", token_hash=hash_secret(secret)
    )
    pipeline = ingest_pipeline(store, require_size_schema=False)
    services = ReportingServices(store=store, pipeline=pipeline, settings=Settings(reporting_db_url=url))
    app = create_reporting_app(services)
    with tempfile.TemporaryDirectory(prefix="tally-bench-bodies-") as tmp:
        warm_bodies, bodies = Path(tmp) / "warm.jsonl", Path(tmp) / "bodies.jsonl"
        warm_bodies.write_bytes(b"\n".join(orjson.dumps(b) for b in batches(warm or [])))
        bodies.write_bytes(b"\n".join(orjson.dumps(b) for b in batches(events)))
        async with anyio.create_task_group() as tg:
            port = await tg.start(serve_quart, app, "127.0.0.1", 0)
            if warm:
                await post_bodies(port, secret, warm_bodies)
            start()
            measured = await post_bodies(port, secret, bodies)
            tg.cancel_scope.cancel()
    return measured


# The client process runs this instead of importing the bench (and with it the whole app): on a busy
# host the app's imports take seconds that count towards CI's minute and measure nothing.
CLIENT = """
import os, sys, time, httpx
base_url, bodies_path = sys.argv[1:3]
headers = {"Authorization": "Bearer " + os.environ["TALLY_BENCH_TOKEN"], "Content-Type": "application/json"}
with open(bodies_path, "rb") as f:
    bodies = f.read().split(b"\\n")
with httpx.Client(base_url=base_url, timeout=120) as client:
    start, cpu = time.perf_counter(), time.process_time()
    for body in bodies:
        answer = client.post("/api/v1/events", content=body, headers=headers)
        if answer.status_code != 200 or answer.json()["rejected"]:
            raise SystemExit(f"ingest answered {answer.status_code}: {answer.text[:300]}")
    print(time.perf_counter() - start, time.process_time() - cpu)
"""


async def ingest_direct(
    store: Store, events: list[dict[str, Any]], warm: list[dict[str, Any]], start: Callable[[], None]
) -> float:
    pipeline = ingest_pipeline(store, require_size_schema=False)

    async def run(items: list[dict[str, Any]]) -> None:
        for batch in batches(items):
            result = await pipeline.ingest(batch)
            if result.rejected:
                raise RuntimeError(f"refused: {result.rejected[0]}")

    await run(warm)
    start()
    return await timed(lambda: run(events))


class Measured:
    """Wall seconds of a path and the CPU it cost: this process (the server, or the COPY/executemany
    client), the PostgreSQL backend serving its one connection, and the HTTP client process. A busy
    machine stretches wall time far more than CPU time, so CPU per event is the steadier figure."""

    def __init__(self, seconds: float = 0.0, own: float = 0.0, server: float = 0.0, client: float = 0.0):
        self.seconds, self.own, self.server, self.client = seconds, own, server, client


async def cpu_of(
    backend_pid: int | None, run: Callable[[Callable[[], None]], Awaitable[tuple[float, float]]]
) -> Measured:
    """``run`` is handed ``start``, to call when its clock starts (the CPU used before, a warm-up's,
    is not counted), and answers (wall seconds, CPU seconds of the client process it started, or 0)."""
    since: dict[str, float] = {}

    def start() -> None:
        since["own"] = time.process_time()
        since["server"] = cpu_seconds(backend_pid) if backend_pid else 0.0

    start()
    seconds, client = await run(start)
    return Measured(
        seconds,
        time.process_time() - since["own"],
        (cpu_seconds(backend_pid) - since["server"]) if backend_pid else 0.0,
        client,
    )


async def no_client(timing: Awaitable[float]) -> tuple[float, float]:
    return await timing, 0.0


async def measure_ingest(
    url: str, events: list[dict[str, Any]], via: str, warm: list[dict[str, Any]] | None = None
) -> Measured:
    """The ingest path through one store connection (so one PostgreSQL backend process), ``warm``
    ingested first outside the measurement."""
    warm = warm or []
    async with open_store(url, max_conns=1) as store:
        await store.migrate_up()
        backend: int | None = None
        if url.startswith("postgresql"):
            async with store.seam._pool.connection() as conn:  # type: ignore[attr-defined]
                backend = conn.info.backend_pid

        async def run(start: Callable[[], None]) -> tuple[float, float]:
            if via == "http":
                return await ingest_over_http(store, url, events, warm, start)
            return await no_client(ingest_direct(store, events, warm, start))

        return await cpu_of(backend, run)


# -- PostgreSQL ---------------------------------------------------------------------------------------------
def pg_schema(database: str, name: str) -> str:
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
    return f"{database}?options={quote(f'-csearch_path={name}')}"


async def pg_floor(url: str, rows: list[tuple[Any, ...]], warm: list[tuple[Any, ...]]) -> Measured:
    async with open_store(url) as store:
        await store.migrate_up()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:

        async def copy_all(rows: list[tuple[Any, ...]]) -> None:
            for chunk in batches(rows):
                async with (
                    conn.transaction(),
                    conn.cursor() as cur,
                    cur.copy(f"COPY events ({EVENT_SELECT}) FROM STDIN") as copy,
                ):
                    for row in chunk:
                        await copy.write_row(row)

        await copy_all(warm)
        return await cpu_of(conn.info.backend_pid, lambda _: no_client(timed(lambda: copy_all(rows))))


async def bench_pg(
    events: list[dict[str, Any]], warm: list[dict[str, Any]], via: str, rounds: int
) -> list[tuple[Measured, Measured]]:
    measured = []
    with scratch_database(PG_ADMIN, "tally_bench") as (_, database):
        for r in range(rounds):
            floor = await pg_floor(pg_schema(database, f"floor{r}"), floor_rows(events), floor_rows(warm))
            ingest = await measure_ingest(pg_schema(database, f"ingest{r}"), events, via, warm)
            measured.append((ingest, floor))
    return measured


# -- SQLite -------------------------------------------------------------------------------------------------
async def sqlite_floor(path: Path, rows: list[tuple[Any, ...]], warm: list[tuple[Any, ...]]) -> Measured:
    from tally.store._sqlite import sqlite_stamp

    url = f"sqlite:///{path}"
    async with open_store(url) as store:
        await store.migrate_up()
    import aiosqlite

    def texts(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        return [(r[0], sqlite_stamp(r[1]), sqlite_stamp(r[2]), *r[3:]) for r in rows]

    async with aiosqlite.connect(path, isolation_level=None) as conn:
        await conn.execute("PRAGMA journal_mode=WAL")
        await conn.execute("PRAGMA synchronous=NORMAL")
        marks = ", ".join("?" for _ in EVENT_COLUMNS)

        async def insert_all(rows: list[tuple[Any, ...]]) -> None:
            for chunk in batches(rows):
                await conn.execute("BEGIN IMMEDIATE")
                await conn.executemany(f"INSERT INTO events ({EVENT_SELECT}) VALUES ({marks})", chunk)
                await conn.execute("COMMIT")

        await insert_all(texts(warm))
        measured = texts(rows)
        return await cpu_of(None, lambda _: no_client(timed(lambda: insert_all(measured))))


async def bench_sqlite(
    events: list[dict[str, Any]], warm: list[dict[str, Any]], via: str, rounds: int
) -> list[tuple[Measured, Measured]]:
    measured = []
    with tempfile.TemporaryDirectory(prefix="tally-bench-") as tmp:
        for r in range(rounds):
            floor = await sqlite_floor(Path(tmp) / f"floor{r}.sqlite3", floor_rows(events), floor_rows(warm))
            ingest = await measure_ingest(f"sqlite:///{Path(tmp) / f'ingest{r}.sqlite3'}", events, via, warm)
            measured.append((ingest, floor))
    return measured


# The issue's target for PostgreSQL: ingest at least half as fast as COPY of the same rows (wall clock).
TARGET_PG = 0.5
# --quick (CI): ten batches a round after the warm-up, so that the COPY it divides by lasts long enough
# for one hiccup of a shared host not to halve the ratio; and a regression floor below the target,
# measured on this two-core host against the same tree with ingest made about 1.5 x slower
# (docs/benchmarks.md, ingest, "the CI guard"): above every slowed run, below every plain one.
QUICK_EVENTS = 5_000
QUICK_FLOOR_PG = 0.20


async def main(args: argparse.Namespace) -> int:
    count = args.events or (QUICK_EVENTS if args.quick else 50_000)
    # Three rounds in the quick run too: one round's ratio on a shared host is a coin toss.
    rounds = args.rounds or 3
    floor_pg = args.floor if args.floor is not None else (QUICK_FLOOR_PG if args.quick else TARGET_PG)
    events = make_events(count)
    # Each round's fresh server, connection and prepared statements warm up on other resources first.
    warm = make_events(WARMUP, first=len(events) // 5 + 1)
    print(
        f"ingest benchmark: {len(events)} events, batches of {BATCH}, via {args.via}, {rounds} round(s), "
        f"load {os.getloadavg()[0]:.1f}"
    )
    print("cpu: us per event in this process (server / bulk client), the PostgreSQL backend, the HTTP client")
    print(
        f"{'backend':<8}{'round':>6} {'path':<8}{'seconds':>9}{'events/s':>10}"
        f"{'cpu us/ev':>11}{'(self':>7}{'pg':>5}{'client)':>8}"
    )
    ratios: list[str] = []
    missed: list[str] = []
    per = 1e6 / len(events)
    for backend in args.backends.split(","):
        run = bench_pg if backend == "pg" else bench_sqlite
        measured = await run(events, warm, args.via, rounds)
        for number, (ingest, floor) in enumerate(measured, start=1):
            for path, m in (("ingest", ingest), ("floor", floor)):
                total = (m.own + m.server + m.client) * per
                print(
                    f"{backend:<8}{number:>6} {path:<8}{m.seconds:>9.2f}{len(events) / m.seconds:>10,.0f}"
                    f"{total:>11.0f}{m.own * per:>7.0f}{m.server * per:>5.0f}{m.client * per:>8.0f}"
                )
        peer = "copy" if backend == "pg" else "executemany"
        ratio = statistics.median(floor.seconds / ingest.seconds for ingest, floor in measured)
        seconds = statistics.median(ingest.seconds for ingest, _ in measured)
        cpu = statistics.median(ingest.own + ingest.server + ingest.client for ingest, _ in measured)
        ratios.append(f"RATIO ingest_{backend}_vs_{peer}={ratio:.3f}")
        if backend == "pg" and ratio < floor_pg:
            missed.append(f"ingest on PostgreSQL at {ratio:.3f} of COPY, below {floor_pg}")
        ratios.append(f"RATIO ingest_{backend}_events_per_s={len(events) / seconds:.0f}")
        ratios.append(f"RATIO ingest_{backend}_cpu_us_per_event={cpu * per:.0f}")
    if rounds > 1:
        print(f"medians over {rounds} rounds (the ratio: the median of each round's floor/ingest):")
    for line in ratios:
        print(line)
    print(f"load {os.getloadavg()[0]:.1f} at the end")
    for line in missed:
        print(f"TARGET MISSED: {line}")
    return 1 if missed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a few thousand events (CI)")
    parser.add_argument("--events", type=int, default=0, help="events (default 50,000; quick 5,000)")
    parser.add_argument("--rounds", type=int, default=0, help="rounds of floor + ingest (default 3)")
    parser.add_argument("--via", choices=("http", "pipeline"), default="http")
    parser.add_argument("--backends", default="pg,sqlite")
    parser.add_argument(
        "--floor",
        type=float,
        default=None,
        help=f"fail below this PostgreSQL ingest/COPY ratio (default {TARGET_PG}; quick {QUICK_FLOOR_PG})",
    )
    arguments = parser.parse_args()
    # The server runs under the daemon's garbage-collector policy, as `tally run` would apply it.
    tune_garbage_collector()
    sys.exit(anyio.run(main, arguments))
