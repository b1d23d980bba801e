"""Reads: pages of 100 from ``GET /api/v1/events`` and ``GET /api/v1/resources`` on PostgreSQL.

The bench creates a database of its own (dropped at the end), fills it through the ingest pipeline
(instances with a create and four updates each, as ``bench.ingest`` makes them) and starts two servers,
each a process of its own served by Hypercorn as the daemon serves the Reporting API:
- ``api``: the Reporting API app (``create_reporting_app``) over ``PostgresStore`` with the daemon's
  pool size, answering a ``read_all`` API token: authentication (the token checked in the page's own
  statement once the process knows it), query validation, the store's read, the JSON answer, the
  metrics, all through the app's lean lane (``tally.http._lean``);
- ``floor``: a minimal ASGI app with a psycopg pool of the same size running the store's page
  statements without the token's check and its rows-to-objects step (``tally.store._pg_pages``, the
  documents read as ``RawJsonb``), answering the same JSON (orjson, sorted keys), with no
  authentication, no validation, no metrics and no Quart.
Before measuring, both answer one page of each listing and the items must be equal.

With ``--keystone`` the api server also takes keystone tokens of cloud ``os-bench``, checked by the
fake cloud's keystone (``keystone``: a process of its own serving ``tally.simulator``'s fake cloud) with
a service credential from a clouds.yaml, as a deployment's clouds config names it; and each round also
measures ``api-ks``: the same api server read with an admin's keystone token in ``X-Auth-Token``,
answered from the cache of valid tokens once the first request checked it. ``RATIO
reads_<listing>_c<C>_keystone_vs_tally`` is the median of api-ks's rate over api's (target >= 0.9).

A separate load process (several with ``--client-procs``) keeps C keep-alive connections busy, each
sending its next request as soon as the answer is in, for ``--seconds`` after a short warm-up, and
counts answers and latencies; any answer but 200 fails the run. Rounds alternate the order of floor
and api, for C in 4, 16 and 64. The load generator's own ceiling is measured in the same run against a
server that answers a canned page of the same size without doing anything: its rate must be far above
the floor's for the figures to be the servers'.

Printed: a row per round, listing, C and target (requests/s, p50, p99, server CPU µs per request, the
PostgreSQL backends' CPU µs per request), then ``RATIO`` lines of the medians over the rounds.

Targets (full mode): at 16 connections, >= 1,000 requests/s, p99 <= 30 ms and >= 0.5 of the floor's
rate for each listing. ``--quick`` (CI) runs two short rounds at 16 connections on a small database and
asserts one thing: the api's server CPU per page is no more than 1/0.6 of the floor's (the floor's
CPU per page over the api's >= 0.6; 0.75 to 0.83 on a quiet host, 0.45 to 0.48 before the lean
lane). CI shares its machine, so an absolute rate or p99 there measures the neighbours, and even a
rate ratio over one-second runs swings with them; CPU per page is what load moves least. Exits 1
when a target is missed.

    .venv/bin/python -m bench.reads [--quick] [--events N] [--rounds R] [--seconds S]
                                    [--connections 4,16,64] [--client-procs P] [--keystone]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import orjson
import psycopg
from psycopg_pool import AsyncConnectionPool

from bench.ingest import BATCH, make_events
from bench.scratch_db import scratch_database
from tally.config import Settings
from tally.daemon import tune_garbage_collector
from tally.http import KeystoneTokens, ReportingServices, TallyPolicy, create_reporting_app, serve_quart
from tally.ingest import IngestPipeline
from tally.openstack import TokenChecker, resolve_cloud
from tally.simulator.fakecloud import serve_fake_cloud
from tally.store import hash_secret, open_store
from tally.store._pg_pages import (
    EVENT_JSON_SELECT,
    ROW_JSON_SELECT,
    RawJsonb,
    events_json_page,
    resources_json_page,
)

PG_ADMIN = os.environ.get("TALLY_BENCH_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
PAGE = 100
LISTINGS = {
    "events": f"/api/v1/events?limit={PAGE}",
    "resources": f"/api/v1/resources?limit={PAGE}",
}
POOL_SIZE = Settings().reporting_db_max_conns  # the daemon's default
WARMUP_S = 0.5
TARGET_RPS = 1000.0
TARGET_P99_MS = 30.0
TARGET_RATIO = 0.5
QUICK_RATIO = 0.6
KEYSTONE_RATIO = 0.9
KEYSTONE_CLOUDS_YAML = "TALLY_BENCH_KEYSTONE_CLOUDS_YAML"  # the api server's service credential

# -- the floor: the same SQL behind a minimal ASGI app --------------------------------------------------
# The statements the store sends for an unfiltered first page, and its rows-to-objects step: the floor
# leaves out only what the API adds around them (routing, authentication, validation, Quart).
FLOOR_SQL = {
    "/api/v1/events": f"SELECT {EVENT_JSON_SELECT} FROM events WHERE TRUE "
    "ORDER BY timestamp, event_id LIMIT %s",
    "/api/v1/resources": f"SELECT {ROW_JSON_SELECT} FROM current_resources WHERE deleted_at IS NULL "
    "ORDER BY cloud, resource_type, resource_id LIMIT %s",
}
FLOOR_PAGE = {"/api/v1/events": events_json_page, "/api/v1/resources": resources_json_page}


class FloorApp:
    """ASGI: the page's SQL on a pooled connection, the rows as JSON; nothing else."""

    name = "floor"  # serve_quart logs the app's name

    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self.pool = pool

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        path = scope["path"]
        async with self.pool.connection() as conn:
            cursor = await conn.execute(FLOOR_SQL[path], [PAGE + 1])
            rows = await cursor.fetchall()
        page = FLOOR_PAGE[path](rows, PAGE)
        answer = {"items": page.items, "next_cursor": "x" if page.next_key is not None else None}
        body = orjson.dumps(answer, option=orjson.OPT_SORT_KEYS) + b"\n"
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


async def _configure_floor(conn: psycopg.AsyncConnection[Any]) -> None:
    conn.adapters.register_loader("jsonb", RawJsonb)  # the pages parse the documents, as the store's do
    await conn.execute("SET TIME ZONE 'UTC'")


# -- the servers (each run as ``--serve KIND URL``: prints its port, serves until stdin closes) --------
async def serve(kind: str, url: str) -> None:
    async with contextlib.AsyncExitStack() as stack, anyio.create_task_group() as tg:
        if kind == "api":
            store = await stack.enter_async_context(open_store(url, max_conns=POOL_SIZE))
            settings = Settings(reporting_internal_token=None)
            services = ReportingServices(
                store=store,
                pipeline=IngestPipeline(store, require_size_schema=False),
                settings=settings,
                keystone=_keystone_tokens(),
            )
            port = await tg.start(serve_quart, create_reporting_app(services), "127.0.0.1", 0)
        elif kind == "keystone":
            port = await tg.start(serve_fake_cloud, _fake_keystone())
        elif kind == "floor":
            pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                url,
                min_size=1,
                max_size=POOL_SIZE,
                open=False,
                kwargs={"autocommit": True},
                configure=_configure_floor,
            )
            await stack.enter_async_context(pool)
            port = await tg.start(serve_quart, FloorApp(pool), "127.0.0.1", 0)
        else:
            port = await tg.start(serve_canned, int(url))
        print(port, flush=True)
        await anyio.to_thread.run_sync(sys.stdin.read)  # the parent closes stdin to stop us
        tg.cancel_scope.cancel()


def _keystone_tokens() -> KeystoneTokens | None:
    clouds_yaml = os.environ.get(KEYSTONE_CLOUDS_YAML)
    if not clouds_yaml:
        return None
    cloud = resolve_cloud("admin", env={"OS_CLIENT_CONFIG_FILE": clouds_yaml})
    return KeystoneTokens({"os-bench": TokenChecker(cloud, timeout_s=5)}, TallyPolicy(), cache_s=300)


def _fake_keystone() -> Any:
    from tally.simulator import WorldBuilder, create_fake_cloud_app

    builder = WorldBuilder(
        cloud="os-bench",
        period_from=datetime(2026, 1, 1, tzinfo=UTC),
        period_to=datetime(2026, 2, 1, tzinfo=UTC),
    )
    builder.project("bench")
    return create_fake_cloud_app(builder.build())


def keystone_token(port: int, directory: Path) -> tuple[str, Path]:
    """An admin's keystone token of the fake keystone on ``port``, and the clouds.yaml naming it."""
    import httpx
    import yaml

    from tally.simulator.fakecloud import ADMIN_PASSWORD, ADMIN_USER, admin_cloud_entry

    auth_url = f"http://127.0.0.1:{port}/v3"
    clouds_yaml = directory / "clouds.yaml"
    clouds_yaml.write_text(yaml.safe_dump({"clouds": {"admin": admin_cloud_entry(auth_url)}}))
    password = {"user": {"name": ADMIN_USER, "domain": {"name": "Default"}, "password": ADMIN_PASSWORD}}
    scope = {"project": {"name": "service", "domain": {"name": "Default"}}}
    body = {"auth": {"identity": {"methods": ["password"], "password": password}, "scope": scope}}
    answer = httpx.post(f"{auth_url}/auth/tokens", json=body)
    answer.raise_for_status()
    return answer.headers["X-Subject-Token"], clouds_yaml


async def serve_canned(size: int, *, task_status: Any) -> None:
    """The load generator's ceiling: a canned 200 of ``size`` bytes for every request, at once."""
    body = b"x" * size
    answer = b"HTTP/1.1 200 \r\ncontent-length: %d\r\ncontent-type: application/json\r\n\r\n%s" % (size, body)

    class Canned(asyncio.Protocol):
        def connection_made(self, transport: Any) -> None:
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            for _ in range(data.count(b"\r\n\r\n")):
                self.transport.write(answer)

    server = await asyncio.get_running_loop().create_server(Canned, "127.0.0.1", 0)
    task_status.started(server.sockets[0].getsockname()[1])
    await anyio.sleep_forever()


# -- the load generator -------------------------------------------------------------------------------
class _Connection(asyncio.Protocol):
    """One keep-alive connection: the next request goes out as soon as an answer is complete."""

    def __init__(self, request: bytes, results: _Results) -> None:
        self.request = request
        self.results = results
        self.buffer = bytearray()
        self.needed = -1
        self.status = 0
        self.sent = 0.0

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self._send()

    def _send(self) -> None:
        self.sent = time.perf_counter()
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            if self.needed < 0:
                end = self.buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                head = bytes(self.buffer[:end]).lower()
                self.status = int(head[9:12])
                at = head.index(b"content-length:") + 15
                length = int(head[at : head.index(b"\r\n", at) if b"\r\n" in head[at:] else None])
                self.needed = end + 4 + length
            if len(self.buffer) < self.needed:
                return
            del self.buffer[: self.needed]
            self.needed = -1
            self.results.record(self.status, time.perf_counter() - self.sent)
            self._send()


@dataclass
class _Results:
    measuring: bool = False
    count: int = 0
    errors: int = 0
    first_error: int = 0

    def __post_init__(self) -> None:
        self.latencies: list[float] = []

    def record(self, status: int, latency: float) -> None:
        if status != 200:
            self.errors += 1
            self.first_error = self.first_error or status
        if self.measuring:
            self.count += 1
            self.latencies.append(latency)


def auth_header(token: str) -> str:
    """``ks:<token>`` is a keystone token, sent in X-Auth-Token; any other a Tally token."""
    if token.startswith("ks:"):
        return f"x-auth-token: {token[3:]}"
    return f"authorization: Bearer {token}"


async def run_load(port: int, path: str, connections: int, seconds: float, token: str) -> dict[str, Any]:
    request = (
        f"GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n{auth_header(token)}\r\naccept: application/json\r\n\r\n"
    ).encode()
    results = _Results()
    loop = asyncio.get_running_loop()
    transports = [
        (await loop.create_connection(lambda: _Connection(request, results), "127.0.0.1", port))[0]
        for _ in range(connections)
    ]
    await asyncio.sleep(WARMUP_S)
    results.measuring = True
    started = time.perf_counter()
    await asyncio.sleep(seconds)
    results.measuring = False
    elapsed = time.perf_counter() - started
    for transport in transports:
        transport.close()
    return {
        "count": results.count,
        "seconds": elapsed,
        "errors": results.errors,
        "first_error": results.first_error,
        "latencies_us": [round(lat * 1e6) for lat in results.latencies],
    }


def client_main(port: int, path: str, connections: int, seconds: float, token: str) -> None:
    import uvloop

    result = uvloop.run(run_load(port, path, connections, seconds, token))
    # The loop may leave stdout non-blocking: a write past the pipe's 64 KiB would then be cut short.
    os.set_blocking(sys.stdout.fileno(), True)
    sys.stdout.buffer.write(orjson.dumps(result))
    sys.stdout.buffer.flush()


# -- the orchestration --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Measured:
    rps: float
    p50_ms: float
    p99_ms: float
    server_us: float  # server process CPU per request
    pg_us: float  # PostgreSQL backends' CPU per request


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _backend_cpu(admin: psycopg.Connection[Any], database: str) -> dict[int, float]:
    """CPU seconds of each PostgreSQL backend of ``database`` (the pools' connections)."""
    rows = admin.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", [database]).fetchall()
    return {int(r[0]): _cpu_seconds(int(r[0])) for r in rows}


class Servers:
    """The api, floor and canned servers as child processes, stopped (stdin closed) at the end."""

    def __init__(self) -> None:
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.ports: dict[str, int] = {}

    def start(self, kind: str, arg: str, env: dict[str, str] | None = None) -> None:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.reads", "--serve", kind, arg],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        self.procs[kind] = proc
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"bench.reads: the {kind} server did not start")
        self.ports[kind] = int(line)

    def stop(self) -> None:
        for proc in self.procs.values():
            assert proc.stdin is not None
            proc.stdin.close()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


def load(port: int, path: str, connections: int, seconds: float, token: str, procs: int) -> dict[str, Any]:
    """Run the load in ``procs`` processes sharing ``connections``; their merged counts and latencies."""
    shares = [connections // procs + (1 if i < connections % procs else 0) for i in range(procs)]
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "bench.reads", "--client", str(port), path, str(n), str(seconds), token],
            stdout=subprocess.PIPE,
        )
        for n in shares
        if n
    ]
    parts = [orjson.loads(child.communicate()[0]) for child in children]
    errors = sum(p["errors"] for p in parts)
    if errors:
        first = next(p["first_error"] for p in parts if p["errors"])
        raise SystemExit(f"bench.reads: {errors} answers were not 200 (the first: {first}) on {path}")
    return {
        "count": sum(p["count"] for p in parts),
        "seconds": max(p["seconds"] for p in parts),
        "latencies": sorted(lat / 1e6 for p in parts for lat in p["latencies_us"]),
    }


def measure(
    servers: Servers, kind: str, admin: psycopg.Connection[Any], database: str, run: dict[str, Any]
) -> Measured:
    server_pid = servers.procs["api" if kind == "api-ks" else kind].pid
    pg_before = _backend_cpu(admin, database)
    cpu_before = _cpu_seconds(server_pid)
    port = servers.ports["api" if kind == "api-ks" else kind]
    given = {k: v for k, v in run.items() if k != "keystone"}
    result = load(port, **{**given, "token": run["keystone"] if kind == "api-ks" else run["token"]})
    cpu = _cpu_seconds(server_pid) - cpu_before
    # A backend opened during the run counts whole; one closed during it is missed (pools seldom close).
    pg_after = _backend_cpu(admin, database) if kind != "canned" else {}
    pg_cpu = sum(seconds - pg_before.get(pid, 0.0) for pid, seconds in pg_after.items())
    lat = result["latencies"]
    # CPU is counted over the warm-up too, so it is divided by every request of the run, not only the
    # measured ones: the rate over the measured window, times the whole run's length.
    total = result["count"] / result["seconds"] * (result["seconds"] + WARMUP_S)
    return Measured(
        rps=result["count"] / result["seconds"],
        p50_ms=lat[len(lat) // 2] * 1000,
        p99_ms=lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000,
        server_us=cpu / total * 1e6,
        pg_us=pg_cpu / total * 1e6,
    )


async def fill(url: str, events: int) -> str:
    """Migrate, ingest ``events`` through the pipeline, create a read_all token; the token's secret."""
    token = secrets.token_urlsafe(24)
    async with open_store(url) as store:
        await store.migrate_up()
        pipeline = IngestPipeline(store, require_size_schema=False)
        items = make_events(events)
        started = time.perf_counter()
        for start in range(0, len(items), BATCH):
            await pipeline.ingest(items[start : start + BATCH], source="collector")
        print(f"filled {len(items)} events in {time.perf_counter() - started:.1f} s", flush=True)
        await store.create_api_token(token_hash=hash_secret(token), role="read_all")
    # What autovacuum would do soon after: without statistics the planner sorts the whole projection.
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("ANALYZE")
    return token


def check_same_pages(servers: Servers, token: str, keystone: str | None) -> int:
    """Both servers (and the api read with a keystone token) answer the same items for each listing;
    the size of the larger page."""
    import httpx

    largest = 0
    for path in LISTINGS.values():
        pages = {}
        reads = [("api", token), ("floor", token)] + ([("api-ks", keystone)] if keystone else [])
        for kind, secret in reads:
            name, value = auth_header(secret).split(": ", 1)
            port = servers.ports["api" if kind == "api-ks" else kind]
            answer = httpx.get(f"http://127.0.0.1:{port}{path}", headers={name: value})
            answer.raise_for_status()
            pages[kind] = orjson.loads(answer.content)
            largest = max(largest, len(answer.content))
        if (
            any(p["items"] != pages["floor"]["items"] for p in pages.values())
            or len(pages["api"]["items"]) != PAGE
        ):
            raise SystemExit(f"bench.reads: the api and the floor answer different pages on {path}")
        if pages["api"]["next_cursor"] is None:
            raise SystemExit(f"bench.reads: {path} has a single page: fill more events")
    return largest


def report(rows: dict[tuple[str, int, str], list[Measured]], quick: bool) -> bool:
    """Print the RATIO lines of the medians; whether every target was met."""
    ok = True
    for (listing, conns, kind), measured in sorted(rows.items()):
        if kind == "api-ks":
            tally = rows[(listing, conns, "api")]
            versus = statistics.median(k.rps / t.rps for k, t in zip(measured, tally, strict=True))
            cpu_versus = statistics.median(
                t.server_us / k.server_us for k, t in zip(measured, tally, strict=True)
            )
            print(f"RATIO reads_{listing}_c{conns}_keystone_vs_tally={versus:.3f}")
            print(f"RATIO reads_{listing}_c{conns}_keystone_cpu_vs_tally={cpu_versus:.3f}")
            if conns == 16 and not quick and versus < KEYSTONE_RATIO:
                ok = False
                print(f"MISSED {listing} at 16 connections: keystone tokens at {versus:.3f} of Tally's rate")
            continue
        if kind != "api":
            continue
        floor = rows[(listing, conns, "floor")]
        ratio = statistics.median(a.rps / f.rps for a, f in zip(measured, floor, strict=True))
        rps = statistics.median(m.rps for m in measured)
        p99 = statistics.median(m.p99_ms for m in measured)
        print(f"RATIO reads_{listing}_c{conns}_vs_floor={ratio:.3f}")
        print(f"RATIO reads_{listing}_c{conns}_per_s={rps:.0f}")
        print(f"RATIO reads_{listing}_c{conns}_p99_ms={p99:.1f}")
        cpu = statistics.median(m.server_us for m in measured)
        print(f"RATIO reads_{listing}_c{conns}_server_cpu_us={cpu:.0f}")
        # The floor's server CPU per page over the api's: what the rate ratio would be with a core each.
        cpu_ratio = statistics.median(f.server_us / a.server_us for a, f in zip(measured, floor, strict=True))
        print(f"RATIO reads_{listing}_c{conns}_cpu_vs_floor={cpu_ratio:.3f}")
        if conns != 16:
            continue
        misses = []
        if quick and cpu_ratio < QUICK_RATIO:
            misses.append(f"{cpu_ratio:.3f} of the floor's CPU per page")
        if not quick and ratio < TARGET_RATIO:
            misses.append(f"{ratio:.3f} of the floor")
        if not quick and rps < TARGET_RPS:
            misses.append(f"{rps:.0f} requests/s")
        if not quick and p99 > TARGET_P99_MS:
            misses.append(f"p99 {p99:.1f} ms")
        if misses:
            ok = False
            print(f"MISSED {listing} at 16 connections: {', '.join(misses)}")
    return ok


def main(args: argparse.Namespace) -> int:
    events = args.events or (2_000 if args.quick else 50_000)
    rounds = args.rounds or (2 if args.quick else 3)
    seconds = args.seconds or (1.0 if args.quick else 3.0)
    conns_list = [int(c) for c in (args.connections or ("16" if args.quick else "4,16,64")).split(",")]
    print(
        f"reads benchmark: pages of {PAGE}, {events} events, {rounds} round(s) of {seconds} s after "
        f"{WARMUP_S} s warm-up, connections {conns_list}, {args.client_procs} client process(es), "
        f"pool {POOL_SIZE}, load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    rows: dict[tuple[str, int, str], list[Measured]] = {}
    with (
        scratch_database(PG_ADMIN, "tally_bench_reads") as (name, url),
        tempfile.TemporaryDirectory() as scratch,
    ):
        token = anyio.run(fill, url, events)
        servers = Servers()
        keystone: str | None = None
        try:
            api_env = {}
            if args.keystone:
                servers.start("keystone", "")
                secret, clouds_yaml = keystone_token(servers.ports["keystone"], Path(scratch))
                keystone, api_env = f"ks:{secret}", {KEYSTONE_CLOUDS_YAML: str(clouds_yaml)}
            servers.start("api", url, api_env)
            servers.start("floor", url)
            page_size = check_same_pages(servers, token, keystone)
            servers.start("canned", str(page_size))
            print(
                f"{'round':>5} {'listing':<10}{'conns':>6} {'target':<7}{'req/s':>8}{'p50 ms':>8}"
                f"{'p99 ms':>8}{'cpu us':>8}{'pg us':>7}"
            )
            with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
                for number in range(1, rounds + 1):
                    for listing, path in LISTINGS.items():
                        for conns in conns_list:
                            run = {
                                "path": path,
                                "connections": conns,
                                "seconds": seconds,
                                "token": token,
                                "keystone": keystone,
                                "procs": args.client_procs,
                            }
                            order = ["floor", "api"] if number % 2 else ["api", "floor"]
                            if keystone:
                                order.insert(1 if number % 2 else 0, "api-ks")
                            for kind in [*order, "canned"] if listing == "events" else order:
                                m = measure(servers, kind, admin, name, run)
                                rows.setdefault((listing, conns, kind), []).append(m)
                                print(
                                    f"{number:>5} {listing:<10}{conns:>6} {kind:<7}{m.rps:>8,.0f}"
                                    f"{m.p50_ms:>8.1f}{m.p99_ms:>8.1f}{m.server_us:>8.0f}{m.pg_us:>7.0f}",
                                    flush=True,
                                )
        finally:
            servers.stop()
    for conns in conns_list:
        ceiling = statistics.median(m.rps for m in rows[("events", conns, "canned")])
        floor = statistics.median(m.rps for m in rows[("events", conns, "floor")])
        print(f"RATIO reads_load_ceiling_c{conns}_vs_floor={ceiling / floor:.1f}")
    if rounds > 1:
        print(f"medians over {rounds} rounds (the ratio: the median of each round's api/floor):")
    return 0 if report(rows, args.quick) else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="two short rounds at 16 connections (CI)")
    parser.add_argument("--events", type=int, default=0, help="events to fill (default 50,000; quick 2,000)")
    parser.add_argument("--rounds", type=int, default=0, help="rounds (default 3; quick 2)")
    parser.add_argument("--seconds", type=float, default=0.0, help="measured seconds per run (3; quick 1)")
    parser.add_argument("--connections", default="", help="comma-separated (default 4,16,64; quick 16)")
    parser.add_argument("--client-procs", type=int, default=1, help="load processes (default 1)")
    parser.add_argument("--keystone", action="store_true", help="also read with keystone tokens (api-ks)")
    parser.add_argument("--serve", nargs=2, metavar=("KIND", "ARG"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--client", nargs=5, metavar=("PORT", "PATH", "C", "S", "TOKEN"), help=argparse.SUPPRESS
    )
    arguments = parser.parse_args()
    if arguments.serve:
        tune_garbage_collector()  # as `tally run` does
        anyio.run(serve, *arguments.serve)
    elif arguments.client:
        port, path, conns, secs, tok = arguments.client
        client_main(int(port), path, int(conns), float(secs), tok)
    else:
        sys.exit(main(arguments))
