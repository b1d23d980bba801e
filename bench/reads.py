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
- ``run-w<N>``: ``tally run`` itself, as deployed: the daemon with its default settings and log level
  (its actors, its middleware, the health and metrics endpoints beside the API) on the same database,
  with ``TALLY_REPORTING_HTTP_WORKERS`` = N (``--daemon-workers``: ``1,default`` by default, ``default``
  being the setting unset, the daemon's default for the host); its CPU is its processes' together.
Before measuring, every server answers one page of each listing and the items must be equal.

With ``--keystone`` the api server also takes keystone tokens of cloud ``os-bench``, checked by the
fake cloud's keystone (``keystone``: a process of its own serving ``tally.simulator``'s fake cloud) with
a service credential from a clouds.yaml, as a deployment's clouds config names it; and each round also
measures ``api-ks``: the same api server read with an admin's keystone token in ``X-Auth-Token``,
answered from the cache of valid tokens once the first request checked it. ``RATIO
reads_<listing>_c<C>_keystone_vs_tally`` is the median of api-ks's rate over api's (target >= 0.9).

A separate load process (several with ``--client-procs``; ``bench._reads.load``) keeps C keep-alive
connections busy, each sending its next request as soon as the answer is in, for ``--seconds`` after
a short warm-up, and counts answers and latencies; any answer but 200 fails the run. Rounds alternate
the order of floor and api, for C in 4, 16 and 64. The load generator's own ceiling is measured in the
same run against a server that answers a canned page of the same size without doing anything: its
rate must be far above the floor's for the figures to be the servers'.

Printed: a row per round, listing, C and target (requests/s, p50, p99, server CPU µs per request, the
PostgreSQL backends' CPU µs per request, and for ``tally run`` on several processes how many of the
connections each held once all were open, main process first), then ``RATIO`` lines of the medians over the
rounds.

Targets (full mode): at 16 connections, >= 1,000 requests/s, p99 <= 30 ms and >= 0.5 of the floor's
rate for each listing; ``tally run`` at its default workers >= 0.8 of the floor's rate with a p99 of
at most 2 x the floor's. ``--quick`` (CI) runs five short rounds at 16 connections on a small
database and asserts: the server CPU per page is no more than 1/0.5 of the floor's for the api (the
floor's CPU per page over the api's >= 0.5; 0.53 to 0.93 in single runs of the lean lane, 0.45 to
0.48 before it) and 1/0.5 for ``tally run`` at its default workers, whose rate is also at least 0.6 of
the floor's and its p99 at most 3 x the floor's, in the same rounds. CI shares its machine, so an
absolute rate or p99 there measures the neighbours, and even a ratio over one-second runs swings
with them: the quick bounds are looser than the full targets, CPU per page being what load moves
least. Exits 1 when a target is missed.

    .venv/bin/python -m bench.reads [--quick] [--events N] [--rounds R] [--seconds S]
                                    [--connections 4,16,64] [--client-procs P] [--keystone]
                                    [--daemon-workers 1,default]
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import orjson
import psycopg

from bench._reads import KEYSTONE_CLOUDS_YAML, LISTINGS, PAGE, PG_ADMIN, WARMUP_S
from bench._reads.load import auth_header
from bench._reads.report import daemon_kinds, report
from bench._reads.servers import Measured, Servers, measure
from bench._reads.serving import POOL_SIZE, keystone_token, serve
from bench.ingest import BATCH, make_events
from bench.scratch_db import scratch_database
from tally.app import ingest_pipeline
from tally.cli import tune_garbage_collector
from tally.store import hash_secret, open_store

__all__ = ["Servers"]  # bench.scale starts its api server through it


async def fill(url: str, events: int) -> str:
    """Migrate, ingest ``events`` through the pipeline, create a read_all token; the token's secret."""
    token = secrets.token_urlsafe(24)
    async with open_store(url) as store:
        await store.migrate_up()
        pipeline = ingest_pipeline(store, require_size_schema=False)
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
    """Every server (and the api read with a keystone token) answers the same items for each listing;
    the size of the largest page."""
    import httpx

    largest = 0
    for path in LISTINGS.values():
        pages = {}
        reads = [(kind, token) for kind in servers.ports if kind not in {"keystone", "canned"}]
        reads += [("api-ks", keystone)] if keystone else []
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
            raise SystemExit(f"bench.reads: the servers answer different pages on {path}")
        if pages["api"]["next_cursor"] is None:
            raise SystemExit(f"bench.reads: {path} has a single page: fill more events")
    return largest


def main(args: argparse.Namespace) -> int:
    events = args.events or (2_000 if args.quick else 50_000)
    rounds = args.rounds or (5 if args.quick else 3)
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
            daemons = daemon_kinds(args.daemon_workers or ("default" if args.quick else "1,default"))
            for kind, workers in daemons.items():
                servers.start_daemon(kind, url, workers, Path(scratch))
            page_size = check_same_pages(servers, token, keystone)
            servers.start("canned", str(page_size))
            print(
                f"{'round':>5} {'listing':<10}{'conns':>6} {'target':<7}{'req/s':>8}{'p50 ms':>8}"
                f"{'p99 ms':>8}{'cpu us':>8}{'pg us':>7} conns/process"
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
                            order = ["floor", "api", *daemons]
                            order = order if number % 2 else order[::-1]
                            if keystone:
                                order.insert(1 if number % 2 else 0, "api-ks")
                            for kind in [*order, "canned"] if listing == "events" else order:
                                m = measure(servers, kind, admin, name, run)
                                rows.setdefault((listing, conns, kind), []).append(m)
                                print(
                                    f"{number:>5} {listing:<10}{conns:>6} {kind:<7}{m.rps:>8,.0f}"
                                    f"{m.p50_ms:>8.1f}{m.p99_ms:>8.1f}{m.server_us:>8.0f}{m.pg_us:>7.0f}"
                                    f" {m.split}",
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
    parser.add_argument("--quick", action="store_true", help="five short rounds at 16 connections (CI)")
    parser.add_argument("--events", type=int, default=0, help="events to fill (default 50,000; quick 2,000)")
    parser.add_argument("--rounds", type=int, default=0, help="rounds (default 3; quick 5)")
    parser.add_argument("--seconds", type=float, default=0.0, help="measured seconds per run (3; quick 1)")
    parser.add_argument("--connections", default="", help="comma-separated (default 4,16,64; quick 16)")
    parser.add_argument("--client-procs", type=int, default=1, help="load processes (default 1)")
    parser.add_argument("--keystone", action="store_true", help="also read with keystone tokens (api-ks)")
    parser.add_argument(
        "--daemon-workers",
        default="",
        help="`tally run` measured with these TALLY_REPORTING_HTTP_WORKERS, `default` for unset "
        "(default 1,default; quick default)",
    )
    parser.add_argument("--serve", nargs=2, metavar=("KIND", "ARG"), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.serve:
        tune_garbage_collector()  # as `tally run` does
        anyio.run(serve, *arguments.serve)
    else:
        sys.exit(main(arguments))
