"""SQLite under load: 64 connections of mixed reads and writes for 60 s must answer no 5xx (D9).

The Reporting API app over a SQLite store is served by Hypercorn here; a separate client process
(httpx, ``--connections`` concurrent workers) sends, for ``--seconds``:
- 30 % ``POST /api/v1/events`` batches of 10 (new events, and every fifth batch a re-send, so
  duplicates too), with an ingest credential;
- 30 % ``GET /api/v1/events?limit=100`` and 30 % ``GET /api/v1/resources?limit=100``, with a reader;
- 10 % the same requests abandoned after 5-500 ms: the client goes away and Quart cancels the
  handler wherever it is, mid-transaction included (the interleaving behind D9).

Prints requests by status class, req/s and p50/p99 of the answered requests. Exits non-zero when any
answer was a 5xx, or when nothing was answered. Throughput is for context only: the target is the
absence of server errors, so there is no floor to compare with. ``--quick`` is the CI size (8 s).

    .venv/bin/python -m bench.sqliteload [--quick] [--seconds S] [--connections N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import httpx

from tally.app import ingest_pipeline
from tally.cli import tune_garbage_collector
from tally.config import Settings
from tally.http import ReportingServices, create_reporting_app, serve_quart
from tally.store import hash_secret, open_store

# Abandoned requests go away at a random point of their answer: waiting for the store's lock, mid-query,
# mid-commit.
ABANDON_AFTER_S = (0.005, 0.5)


def batch(worker: int, n: int) -> list[dict[str, Any]]:
    """Ten instance events of a worker's own resources, in time order."""
    events = []
    for k in range(10):
        resource = f"vm-{worker:02d}-{(n * 10 + k) % 500:03d}"
        create = (n * 10 + k) < 500
        events.append(
            {
                "event_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{worker}/{n}/{k}")),
                "timestamp": f"2026-03-01T{(n // 3600) % 24:02d}:{(n // 60) % 60:02d}:{n % 60:02d}.{k:06d}Z",
                "event_type": "compute.instance.create.end" if create else "compute.instance.update",
                "platform": "openstack",
                "cloud": "os-load",
                "resource_type": "instance",
                "resource_id": resource,
                "project_id": f"p-{worker % 8}",
                "payload": {
                    "state": "active",
                    **(
                        {"size": {"vcpus": 1, "ram_gb": 2, "disk_gb": 10, "flavor": "m1.small"}}
                        if create
                        else {}
                    ),
                },
            }
        )
    return events


async def worker(
    client: httpx.AsyncClient,
    number: int,
    deadline: float,
    tokens: dict[str, str],
    statuses: Counter[str],
    latencies: list[float],
) -> None:
    rng = random.Random(number)
    sent = 0
    while time.perf_counter() < deadline:
        pick = rng.random()
        abandon = pick >= 0.9
        kind = rng.choice(("post", "events", "resources")) if abandon else None
        if kind == "post" or (kind is None and pick < 0.3):
            n = sent - 1 if sent and sent % 5 == 0 else sent
            sent += 1
            request = client.build_request(
                "POST",
                "/api/v1/events",
                json=batch(number, n),
                headers={"Authorization": f"Bearer {tokens['ingest']}"},
            )
        else:
            path = (
                "/api/v1/events" if kind == "events" or (kind is None and pick < 0.6) else "/api/v1/resources"
            )
            request = client.build_request(
                "GET", path, params={"limit": 100}, headers={"Authorization": f"Bearer {tokens['reader']}"}
            )
        started = time.perf_counter()
        try:
            if abandon:
                with anyio.fail_after(rng.uniform(*ABANDON_AFTER_S)):
                    answer = await client.send(request)
            else:
                answer = await client.send(request)
        except TimeoutError:
            statuses["abandoned"] += 1
            continue
        except httpx.HTTPError as exc:
            statuses[f"client error {type(exc).__name__}"] += 1
            continue
        latencies.append(time.perf_counter() - started)
        statuses[f"{answer.status_code // 100}xx"] += 1
        if answer.status_code >= 500:
            print(
                f"5xx: {request.method} {request.url.path} {answer.status_code} {answer.text[:200]}",
                flush=True,
            )


async def run_client(base_url: str, seconds: float, connections: int) -> None:
    """The client process: print one JSON line of what was answered."""
    tokens = json.loads(os.environ["TALLY_BENCH_TOKENS"])
    statuses: Counter[str] = Counter()
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as client:
        deadline = time.perf_counter() + seconds
        async with anyio.create_task_group() as tg:
            for number in range(connections):
                tg.start_soon(worker, client, number, deadline, tokens, statuses, latencies)
    latencies.sort()
    print(
        json.dumps(
            {
                "statuses": dict(statuses),
                "answered": len(latencies),
                "p50_ms": 1000 * statistics.median(latencies) if latencies else None,
                "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))] if latencies else None,
            }
        )
    )


async def main(args: argparse.Namespace) -> int:
    seconds = args.seconds or (8.0 if args.quick else 60.0)
    with tempfile.TemporaryDirectory(prefix="tally-bench-sqliteload-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'tally.sqlite3'}"
        async with open_store(url) as store:
            await store.migrate_up()
            tokens = {"ingest": secrets.token_urlsafe(24), "reader": secrets.token_urlsafe(24)}
            await store.create_ingest_credential(
                platform="openstack", cloud="os-load", token_hash=hash_secret(tokens["ingest"])
            )
            await store.create_api_token(token_hash=hash_secret(tokens["reader"]), role="read_all")
            services = ReportingServices(
                store=store,
                pipeline=ingest_pipeline(store, require_size_schema=False),
                settings=Settings(reporting_db_url=url),
            )
            app = create_reporting_app(services)
            async with anyio.create_task_group() as tg:
                port = await tg.start(serve_quart, app, "127.0.0.1", 0)
                client = await anyio.run_process(
                    [
                        sys.executable,
                        "-m",
                        "bench.sqliteload",
                        "--client",
                        f"http://127.0.0.1:{port}",
                        "--seconds",
                        str(seconds),
                        "--connections",
                        str(args.connections),
                    ],
                    env={**os.environ, "TALLY_BENCH_TOKENS": json.dumps(tokens)},
                    check=False,
                )
                tg.cancel_scope.cancel()
    if client.returncode != 0:
        print(f"bench client failed: {client.stderr.decode()[-2000:]}", file=sys.stderr)
        return 1
    lines = client.stdout.decode().strip().splitlines()
    for line in lines[:-1]:
        print(line)
    report = json.loads(lines[-1])
    statuses: dict[str, int] = report["statuses"]
    answered = int(report["answered"])
    print(f"sqlite load: {args.connections} connections for {seconds:.0f} s")
    for status, count in sorted(statuses.items()):
        print(f"  {status:<24}{count:>9}")
    if answered:
        rate = answered / seconds
        print(f"  answered {rate:,.0f} req/s, p50 {report['p50_ms']:.1f} ms, p99 {report['p99_ms']:.1f} ms")
    server_errors = statuses.get("5xx", 0)
    print(f"RATIO sqliteload_5xx={server_errors}")
    print(f"RATIO sqliteload_req_per_s={answered / seconds:.0f}")
    if server_errors or not answered:
        print("sqliteload: FAILED (a 5xx answered, or nothing answered)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="8 s (CI)")
    parser.add_argument("--seconds", type=float, default=0.0, help="duration (default 60; quick 8)")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--client", metavar="URL", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.client:
        anyio.run(run_client, arguments.client, arguments.seconds, arguments.connections)
    else:
        tune_garbage_collector()
        sys.exit(anyio.run(main, arguments))
