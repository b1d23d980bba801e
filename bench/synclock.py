"""Benchmark: back-to-back syncs of one cloud on PostgreSQL under load; none may be refused its lock.

Each sync runs the real path (``run_sync`` with the ``OpenStackAdapter``) against the fake cloud of
bench/sync.py at a ten-thousandth of its size (about 50 resources), served over HTTP by its own
process, on a fresh PostgreSQL database. One sync starts as soon as the previous one has returned, so
each takes the cloud's lock right after the last one released it: a refusal (``lock_held``) there is
the defect this measures. Meanwhile another process loads the same server: a store ingesting batches
of events of another cloud, and three sessions that connect, run a query of a few milliseconds and
disconnect, over and over.

Prints the refusals and failures over the total, the syncs per second and the sync times, then
``RATIO`` lines; exits non-zero if a sync was refused or failed. ``--quick`` (CI) runs 100 syncs.

    python -m bench.synclock [--quick] [--syncs N] [--pg ADMIN_URL]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import httpx
import psycopg
import yaml

from bench.scratch_db import scratch_database
from bench.sync import CLOUD, T1

SCALE = 0.0002
LOAD_SESSIONS = 3


# -- the load, in a process of its own ----------------------------------------------------------------


def run_load(store_url: str) -> None:
    """Ingest and churn sessions until SIGTERM, then print what was done."""
    import logging

    from tally.core import parse_event
    from tally.store import open_store

    done = {"batches": 0, "sessions": 0}

    async def ingest() -> None:
        async with open_store(store_url, max_conns=2) as store:
            at = datetime(2026, 7, 1, tzinfo=UTC)
            for i in range(10**9):
                stamp = (at + timedelta(seconds=i)).isoformat()
                batch = [
                    parse_event(
                        {
                            "event_id": f"load-{i}-{j}",
                            "timestamp": stamp,
                            "event_type": "compute.instance.update",
                            "platform": "openstack",
                            "cloud": "os-load",
                            "resource_type": "instance",
                            "resource_id": f"vm-{(i * 20 + j) % 500}",
                            "project_id": "p-load",
                            "payload": {"state": "active"},
                        }
                    )
                    for j in range(20)
                ]
                await store.write_batch(batch)
                done["batches"] += 1

    async def churn() -> None:
        while True:
            async with await psycopg.AsyncConnection.connect(store_url, autocommit=True) as conn:
                await conn.execute("SELECT count(*) FROM generate_series(1, 100000)")
            done["sessions"] += 1

    # SIGTERM cancels queries in flight on purpose; psycopg's warnings about them would be noise.
    logging.getLogger("psycopg").setLevel(logging.ERROR)

    async def main() -> None:
        with anyio.open_signal_receiver(signal.SIGTERM) as signals:
            async with anyio.create_task_group() as tg:
                tg.start_soon(ingest)
                for _ in range(LOAD_SESSIONS):
                    tg.start_soon(churn)
                print("LOAD up", flush=True)
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    break
        print(f"LOAD batches={done['batches']} sessions={done['sessions']}", flush=True)

    anyio.run(main)


# -- the syncs ----------------------------------------------------------------------------------------


def run_syncs(store_url: str, count: int) -> tuple[dict[str, int], list[float], float]:
    """``count`` syncs one after the other: the outcomes by status, each sync's seconds, the wall time."""
    from tally.app import ingest_pipeline
    from tally.config import CloudEntry
    from tally.openstack import OpenStackAdapter
    from tally.reconcile import RunSettings
    from tally.reconcile._run import run_sync
    from tally.store import open_store

    async def main() -> tuple[dict[str, int], list[float], float]:
        async with open_store(store_url) as store:
            pipeline = ingest_pipeline(store, require_size_schema=False)
            entry = CloudEntry(
                CLOUD, "openstack", "openstack", {"os_cloud": "admin", "include_octavia": True}
            )
            settings = RunSettings(settle_s=0, budget_s=60)
            statuses: dict[str, int] = {}
            seconds: list[float] = []
            began = time.perf_counter()
            for i in range(count):
                started = time.perf_counter()
                outcome = await run_sync(
                    entry,
                    store=store,
                    pipeline=pipeline,
                    open_adapter=OpenStackAdapter,
                    settings=settings,
                    at=T1 + timedelta(seconds=i),
                )
                seconds.append(time.perf_counter() - started)
                statuses[outcome.status.value] = statuses.get(outcome.status.value, 0) + 1
            return statuses, seconds, time.perf_counter() - began

    return anyio.run(main)


# -- the orchestration --------------------------------------------------------------------------------


def clouds_yaml(directory: Path, base: str) -> Path:
    from tally.simulator.fakecloud import ADMIN_PASSWORD, ADMIN_PROJECT, ADMIN_USER

    auth = {
        "auth_url": f"{base}/v3",
        "username": ADMIN_USER,
        "password": ADMIN_PASSWORD,
        "project_name": ADMIN_PROJECT,
        "user_domain_name": "Default",
        "project_domain_name": "Default",
    }
    path = directory / "clouds.yaml"
    path.write_text(
        yaml.safe_dump(
            {"clouds": {"admin": {"auth_type": "password", "auth": auth, "region_name": "RegionOne"}}}
        )
    )
    return path


def migrate(store_url: str) -> None:
    from tally.store import open_store

    async def main() -> None:
        async with open_store(store_url) as store:
            await store.migrate_up()

    anyio.run(main)


def start(args: list[str], ready: str) -> tuple[subprocess.Popen[str], str]:
    """A child ``python -m ...`` and its first line, which must start with ``ready``."""
    child = subprocess.Popen([sys.executable, "-m", *args], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    line = child.stdout.readline()
    if not line.startswith(ready):
        child.kill()
        raise RuntimeError(f"{' '.join(args)} did not start (it printed {line!r})")
    return child, line


def orchestrate(count: int, admin_url: str) -> int:
    fake, load = None, None
    with scratch_database(admin_url, "tally_bench_synclock") as (_, store_url):
        try:
            migrate(store_url)
            fake, line = start(["bench.sync", "--scale", str(SCALE), "fake"], "PORT ")
            base = f"http://127.0.0.1:{int(line.split()[1])}"
            httpx.put(f"{base}/bench/at", json={"at": T1.isoformat()}, timeout=10).raise_for_status()
            load, _ = start(["bench.synclock", "load", store_url], "LOAD up")
            with tempfile.TemporaryDirectory(prefix="tally-bench-synclock-") as tmp:
                os.environ["OS_CLIENT_CONFIG_FILE"] = str(clouds_yaml(Path(tmp), base))
                statuses, seconds, wall = run_syncs(store_url, count)
            load.send_signal(signal.SIGTERM)
            assert load.stdout is not None
            load_line = load.stdout.read().strip() or "LOAD (no report)"
            load.wait(timeout=30)
        finally:
            for child in (fake, load):
                if child is not None and child.poll() is None:
                    child.kill()
                    child.wait(timeout=30)
    refused = statuses.get("lock_held", 0)
    failed = statuses.get("failed", 0)
    ordered = sorted(seconds)
    print(
        f"store: PostgreSQL; {count} syncs in {wall:.1f} s; load meanwhile: {load_line.removeprefix('LOAD ')}"
    )
    print(f"outcomes: {statuses}")
    print(f"refused {refused}/{count}, failed {failed}/{count}, {count / wall:.1f} syncs/s")
    print(
        f"sync seconds: median {statistics.median(ordered):.4f}, "
        f"p99 {ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]:.4f}, max {ordered[-1]:.4f}"
    )
    print(f"RATIO synclock_refused_fraction={refused / count:.4f}")
    print(f"RATIO synclock_failed_fraction={failed / count:.4f}")
    print(f"RATIO synclock_syncs_per_s={count / wall:.1f}")
    return 0 if refused == 0 and failed == 0 else 1


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="100 syncs (CI)")
    parser.add_argument("--syncs", type=int, default=None, help="how many syncs (default 1000)")
    parser.add_argument(
        "--pg",
        metavar="ADMIN_URL",
        default=os.environ.get("TALLY_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres"),
        help="the PostgreSQL to create the benchmark's database on (default: the tests' TALLY_TEST_PG_URL)",
    )
    parser.add_argument("_phase", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._phase:
        if args._phase[0] != "load" or len(args._phase) != 2:
            parser.error(f"unknown phase {' '.join(args._phase)!r} (the child phase is: load STORE_URL)")
        run_load(args._phase[1])
        return 0
    count = args.syncs if args.syncs is not None else (100 if args.quick else 1000)
    if count < 1:
        parser.error(f"--syncs must be at least 1, got {count}")
    return orchestrate(count, args.pg)


if __name__ == "__main__":
    sys.exit(main())
