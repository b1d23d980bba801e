"""Benchmark: a month of usage of a 250,000-resource cloud, exported as CSV over the Reporting API.

The store is a fresh PostgreSQL database holding the ``bench.sync`` mix (100,000 instances, 100,000
volumes, 30,000 floating IPs, 15,000 images, 5,000 load balancers; ``--quick`` a twentieth), born
over the month before, then a month of churn: 10 % of the instances shut off mid-month, 5 % resized,
5 % deleted, 5 % of the volumes grown, 3 % deleted, 5 % of the floating IPs released, and 2 % of
each type created during the month. Then, in alternate rounds, each in a process of its own so its
peak RSS is its own:

- ``export``: the Reporting API (Hypercorn on a loopback port) streams ``GET /api/v1/usage`` for the
  month with ``Accept: text/csv`` to an httpx client in the same process, which counts the lines;
- ``floor``: a bare server-side-cursor read of the same events (the columns the fold reads, in key
  and fold order): what reading the data costs without folding, encoding or HTTP;
- ``plain``, ``rated``, ``focus-csv``, ``focus-parquet``: the month as ``tally usage --store`` writes
  it (into a temporary file), unrated, rated by a price list (every flavor priced by name), and as
  FOCUS CSV and Parquet.

Targets: export within 30 s, peak RSS at most 1 GiB, at least 20,000 CSV rows/s, the rated export
within 1.5 x the unrated one (medians of the wall clock); the CPU time of the export process is
reported beside them, and ``--quick`` (CI, on a shared host) gates on RSS and on the export's time
against the bare read of the same events measured in the same round (at most 6 x the floor).

    python -m bench.usage [--quick] [--scale F] [--rounds N] [--pg ADMIN_URL]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio

MONTH = datetime(2026, 7, 1, tzinfo=UTC)
MONTH_END = datetime(2026, 8, 1, tzinfo=UTC)
BORN_FROM = datetime(2026, 6, 1, tzinfo=UTC)
FULL = {"instance": 100_000, "volume": 100_000, "floating_ip": 30_000, "image": 15_000, "loadbalancer": 5_000}
CLOUD = "os-bench"
TOKEN = "bench-usage-reader"
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/postgres"
TARGET_S, TARGET_RSS_MIB, TARGET_ROWS_S = 30.0, 1024.0, 20_000.0
QUICK_EXPORT_VS_FLOOR = 6.0
RATED_VS_PLAIN = 1.5


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _size(rtype: str, i: int, grown: bool = False) -> dict[str, Any]:
    if rtype == "instance":
        n = 1 + i % 5
        return {"vcpus": n, "ram_gb": 2 * n, "disk_gb": 20, "flavor": f"m1.f{n - 1}"}
    if rtype == "volume":
        return {"size_gb": 200 if grown else 10 + i % 90, "type": ("ssd", "hdd", "vault")[i % 3]}
    if rtype == "floating_ip":
        return {"ip_version": 4}
    if rtype == "image":
        return {"size_gb": 1 + i % 40}
    return {"listeners": 1 + i % 3, "pools": 1 + i % 2}


def world_events(scale: float) -> list[Any]:
    """Every event of the world, creates first (so each batch is a run of new rows), then the churn."""
    from tally.core import parse_event

    states = {"instance": "active", "volume": "available", "floating_ip": "ACTIVE", "image": "active"}
    creates: list[Any] = []
    churn: list[Any] = []
    born_span = int((MONTH - BORN_FROM).total_seconds())
    month_span = int((MONTH_END - MONTH).total_seconds())

    def make(rtype: str, rid: str, kind: str, at: datetime, n: int, **payload: Any) -> Any:
        return parse_event(
            {
                "event_id": f"{rid}-{kind}-{n}",
                "timestamp": at.isoformat().replace("+00:00", "Z"),
                "event_type": f"bench.{rtype}.{kind}",
                "platform": "openstack",
                "cloud": CLOUD,
                "resource_type": rtype,
                "resource_id": rid,
                "project_id": f"tenant-{n % 50}",
                "payload": payload,
            }
        )

    for rtype, full in FULL.items():
        state = states.get(rtype, "ACTIVE")
        for i in range(max(1, int(full * scale))):
            rid = f"{rtype}-{i:06}"
            in_month = i % 50 == 7
            born = (
                (MONTH + timedelta(seconds=(i * 7919) % month_span))
                if in_month
                else (BORN_FROM + timedelta(seconds=(i * 7919) % born_span))
            )
            creates.append(make(rtype, rid, "create", born, i, state=state, size=_size(rtype, i)))
            mid = MONTH + timedelta(days=10, seconds=(i * 104729) % (15 * 86400))
            if mid <= born:
                continue
            if rtype == "instance" and i % 10 == 1:
                churn.append(make(rtype, rid, "power_off", mid, i, state="shutoff"))
            elif rtype == "instance" and i % 20 == 2:
                churn.append(make(rtype, rid, "resize", mid, i, state=state, size=_size(rtype, i + 1)))
            elif rtype == "volume" and i % 20 == 3:
                churn.append(
                    make(rtype, rid, "resize", mid, i, state=state, size=_size(rtype, i, grown=True))
                )
            if (
                (rtype == "instance" and i % 20 == 5)
                or (rtype == "volume" and i % 33 == 4)
                or (rtype == "floating_ip" and i % 20 == 6)
            ):
                churn.append(make(rtype, rid, "delete", mid + timedelta(days=2), i))
    return creates + churn


async def fill(url: str, scale: float) -> int:
    from tally.store import hash_secret, open_store

    events = world_events(scale)
    async with open_store(url) as store:
        await store.migrate_up()
        await store.create_api_token(token_hash=hash_secret(TOKEN), role="read_all")
        for start in range(0, len(events), 1000):
            await store.write_batch(events[start : start + 1000])
        status = await store.resource_stats(["cloud"], filters=_all())
    print(f"filled {len(events):,} events of {status[0]['count']:,} resources", flush=True)
    return len(events)


def _all() -> Any:
    from tally.store import ResourceFilter

    return ResourceFilter(status="all")


async def export_round(url: str, start: datetime = MONTH, end: datetime = MONTH_END) -> dict[str, Any]:
    """Serve the API over the store and stream the CSV of ``[start, end)`` (the month) through it."""
    import httpx
    from pydantic import SecretStr

    from tally.app import ingest_pipeline
    from tally.config import Settings
    from tally.core import format_instant
    from tally.http import ReportingServices, create_reporting_app, serve_quart
    from tally.store import open_store

    async with open_store(url) as store, anyio.create_task_group() as tg:
        settings = Settings(reporting_internal_token=SecretStr("bench-internal"))
        services = ReportingServices(
            store=store, pipeline=ingest_pipeline(store, require_size_schema=False), settings=settings
        )
        port = await tg.start(serve_quart, create_reporting_app(services), "127.0.0.1", 0)
        params = {"from": format_instant(start), "to": format_instant(end), "cloud": CLOUD}
        headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "text/csv"}
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as warm:
            # The first request pays for what the app builds lazily; a bill is not the first request.
            warmup = {**params, "resource_type": "none"}
            (await warm.get("/api/v1/usage", params=warmup, headers=headers)).raise_for_status()
        rows, size = -1, 0  # the header is not a row
        began, cpu_began = time.perf_counter(), cpu_s()
        async with (
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=600) as client,
            client.stream("GET", "/api/v1/usage", params=params, headers=headers) as response,
        ):
            response.raise_for_status()
            async for chunk in response.aiter_bytes():
                rows += chunk.count(b"\n")
                size += len(chunk)
        seconds, cpu = time.perf_counter() - began, cpu_s() - cpu_began
        tg.cancel_scope.cancel()
    return {"seconds": seconds, "cpu_s": cpu, "rows": rows, "bytes": size, "peak_rss_mib": peak_rss_mib()}


# Priced the way an operator usually does: every flavor by name, a state factor, volume types. One
# version: a price change mid-month cuts every line in two, which the tests cover, not this figure.
BENCH_PRICES = """
name: bench
currency: EUR
versions:
  - effective_from: "2026-01-01T00:00:00Z"
    minimum_seconds: 60
    types:
      instance:
        flavors: {m1.f0: "0.01", m1.f1: "0.02", m1.f2: "0.04", m1.f3: "0.08", m1.f4: "0.16"}
        vcpu_hour: "0.01"
        ram_gb_hour: "0.005"
        states: {shutoff: "0.5"}
      volume: {gb_hour: "0.0001", type_modifiers: {ssd: "1.5", vault: "0.5"}}
      image: {gb_hour: "0.00005"}
      floating_ip: {hour: "0.004"}
      loadbalancer: {hour: "0.025", listener_hour: "0.002", pool_hour: "0.001"}
"""
#: The CLI's exports of the month into a file: unrated CSV, rated CSV, FOCUS CSV and Parquet.
FILE_PHASES = ("plain", "rated", "focus-csv", "focus-parquet")


async def file_round(url: str, phase: str) -> dict[str, Any]:
    """One export of the month the way ``tally usage --store`` writes it, in the phase's format."""
    from tally.core import UsageWindow
    from tally.rating import load_price_list
    from tally.store import open_store
    from tally.usage import UsageQuery, csv_rows, quantity_members, resource_pages
    from tally.usage._focus_write import write_focus
    from tally.usage._rated_write import write_rated

    price_list = load_price_list(BENCH_PRICES)
    query = UsageQuery(window=UsageWindow(MONTH, MONTH_END, MONTH_END), cloud=CLOUD)
    async with open_store(url) as store:
        members = quantity_members(await store.list_resource_types())
        with tempfile.TemporaryFile() as sink:
            began, cpu_began = time.perf_counter(), cpu_s()
            if phase == "plain":
                async for rows in resource_pages(store, query):
                    sink.write(csv_rows(rows, members).encode())
            elif phase == "rated":
                await write_rated(store, query, price_list, "csv", sink)
            else:
                await write_focus(store, query, price_list, phase, sink, provider="bench")
            seconds, cpu = time.perf_counter() - began, cpu_s() - cpu_began
            size = sink.tell()
            sink.seek(0)
            lines = sum(chunk.count(b"\n") for chunk in iter(lambda: sink.read(1 << 20), b""))
    return {"seconds": seconds, "cpu_s": cpu, "rows": lines, "bytes": size, "peak_rss_mib": peak_rss_mib()}


def floor_round(url: str) -> dict[str, Any]:
    import psycopg

    began, cpu_began = time.perf_counter(), cpu_s()
    rows = 0
    with psycopg.connect(url) as conn, conn.cursor(name="floor") as cursor:
        cursor.itersize = 5000
        cursor.execute(
            "SELECT cloud, resource_type, resource_id, event_id, timestamp, received_at, event_type, "
            "platform, project_id, source, payload->>'state', payload->'size' FROM events "
            "WHERE cloud = %s AND timestamp < %s "
            "ORDER BY cloud, resource_type, resource_id, timestamp, received_at, event_id",
            (CLOUD, MONTH_END),
        )
        for _ in cursor:
            rows += 1
    seconds, cpu = time.perf_counter() - began, cpu_s() - cpu_began
    return {"seconds": seconds, "cpu_s": cpu, "rows": rows, "peak_rss_mib": peak_rss_mib()}


def child(phase: str, url: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.usage", phase, url], capture_output=True, text=True, check=False
    )
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            parsed: dict[str, Any] = json.loads(line[len("RESULT ") :])
            return parsed
    raise RuntimeError(f"phase {phase} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a twentieth of the full cloud, one round")
    parser.add_argument("--scale", type=float, default=None, help="fraction of the full cloud")
    parser.add_argument("--rounds", type=int, default=None, help="rounds of floor and export (default 3)")
    parser.add_argument(
        "--pg", metavar="ADMIN_URL", default=DEFAULT_PG, help=f"PostgreSQL (default {DEFAULT_PG})"
    )
    parser.add_argument("_phase", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._phase:
        phase, url = args._phase
        if phase in FILE_PHASES:
            result = anyio.run(file_round, url, phase)
        else:
            result = anyio.run(export_round, url) if phase == "export" else floor_round(url)
        print("RESULT " + json.dumps(result), flush=True)
        return 0
    scale = args.scale if args.scale is not None else (0.05 if args.quick else 1.0)
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 3)
    return orchestrate(args.pg, scale, rounds, quick=args.quick)


def orchestrate(admin_url: str, scale: float, rounds: int, *, quick: bool = False) -> int:
    import psycopg

    from bench.scratch_db import scratch_database

    with scratch_database(admin_url, "tally_bench_usage") as (_, url):
        began = time.perf_counter()
        events = anyio.run(fill, url, scale)
        print(
            f"fill took {time.perf_counter() - began:.1f}s (scale {scale:g}, {events:,} events)", flush=True
        )
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
        floors, exports = [], []
        files: dict[str, list[dict[str, Any]]] = {phase: [] for phase in FILE_PHASES}
        for n in range(1, rounds + 1):
            floors.append(child("floor", url))
            exports.append(child("export", url))
            f, e = floors[-1], exports[-1]
            print(
                f"round {n}: floor {f['seconds']:.2f}s (CPU {f['cpu_s']:.2f}s, {f['rows']:,} events) | "
                f"export {e['seconds']:.2f}s (CPU {e['cpu_s']:.2f}s) {e['rows']:,} rows "
                f"{e['bytes'] / 2**20:.1f} MiB {e['rows'] / e['seconds']:,.0f} rows/s "
                f"({e['rows'] / e['cpu_s']:,.0f} per CPU-second) peak RSS {e['peak_rss_mib']:.0f} MiB "
                f"load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
            for phase in FILE_PHASES:
                files[phase].append(r := child(phase, url))
                print(
                    f"round {n}: {phase} {r['seconds']:.2f}s (CPU {r['cpu_s']:.2f}s) {r['rows']:,} lines "
                    f"{r['bytes'] / 2**20:.1f} MiB peak RSS {r['peak_rss_mib']:.0f} MiB",
                    flush=True,
                )
    export_s = statistics.median(e["seconds"] for e in exports)
    plain_s = statistics.median(r["seconds"] for r in files["plain"])
    rated_vs = {p: statistics.median(r["seconds"] for r in files[p]) / plain_s for p in FILE_PHASES[1:]}
    rows_s = statistics.median(e["rows"] / e["seconds"] for e in exports)
    rows_cpu_s = statistics.median(e["rows"] / e["cpu_s"] for e in exports)
    rss = max(e["peak_rss_mib"] for e in exports)
    vs_floor = statistics.median(e["seconds"] / f["seconds"] for e, f in zip(exports, floors, strict=True))
    print(f"RATIO usage_export_s={export_s:.2f}")
    print(f"RATIO usage_export_vs_30s={export_s / TARGET_S:.3f}")
    print(f"RATIO usage_csv_rows_per_s={rows_s:.0f}")
    print(f"RATIO usage_csv_rows_per_cpu_s={rows_cpu_s:.0f}")
    print(f"RATIO usage_peak_rss_vs_1gib={rss / TARGET_RSS_MIB:.3f}")
    print(f"RATIO usage_export_vs_floor={vs_floor:.2f}")
    print(f"RATIO usage_plain_file_s={plain_s:.2f}")
    for phase, ratio in rated_vs.items():
        print(f"RATIO usage_{phase.replace('-', '_')}_vs_plain={ratio:.2f}")
    # The wall-clock targets are the issue's; on a shared host they measure the host as much as the
    # code (an absolute rate per CPU-second failed CI at load 2.3 with the floor's CPU slowed alike),
    # so --quick holds the export to the bare read of the same events in the same round: quiet 3.8 x,
    # CI 3.1-4.2 x; a regression that doubles the export's work fails. The full run holds the targets.
    gates = [("peak RSS within 1 GiB", rss <= TARGET_RSS_MIB)]
    if not quick:  # a twentieth of the cloud is too short a run to hold to a ratio on a shared host
        gates.append(("rated within 1.5 x the unrated export", rated_vs["rated"] <= RATED_VS_PLAIN))
    if quick:
        gates.append(("export within 6 x its floor", vs_floor <= QUICK_EXPORT_VS_FLOOR))
    else:
        gates += [
            ("at least 20,000 rows per CPU-second", rows_cpu_s >= TARGET_ROWS_S),
            ("export within 30 s", export_s <= TARGET_S),
            ("at least 20,000 rows/s", rows_s >= TARGET_ROWS_S),
        ]
    missed = [name for name, ok in gates if not ok]
    for name in missed:
        print(f"TARGET MISSED: {name}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
