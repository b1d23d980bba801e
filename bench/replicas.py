"""Three replicas on one PostgreSQL database and one quorum queue, one SIGKILLed twice and one SIGTERMed.

Three ``tally run`` processes share a database, a RabbitMQ queue of type quorum (competing consumers,
each with its own outbox in its own state directory) and one clouds config: two clouds, both listing
the simulator's fake cloud (served here, in a thread, each compute call slowed so that a sync lasts
long enough to be killed in the middle). A service publishes N ``compute.instance.create.end``
notifications through oslo.messaging's own Notifier (``tests/collector/oslo_publisher.py``, a process
of its own, one instance ``vm-K`` per notification) to cloud ``os-notify``, which no sync touches.

While it publishes: the first replica seen running a sync (a ``running`` row whose start it
logged) is SIGKILLed in the middle of it, and again at a random moment later; each time it is
started again on the same state directory. The next replica is stopped with SIGTERM (its drain must
exit 0) and started again. Once every notification is stored (or a bound ran out) the bench
reads the metrics of all three, stops them with SIGTERM and checks, in the database:

- the events of ``os-notify``: each ``vm-K`` once (lost = N minus the distinct ids, doubled = rows
  minus the distinct ids), and as many projection rows;
- each cloud's ``sync_runs``: no row left ``running``; the run killed in the middle failed with the
  reason "never ended" and no ``completed_at``; no other failure than runs cancelled by a SIGTERM;
  consecutive ended runs at least ``interval × 0.8`` apart (the "synced within the interval" rule)
  and about one an interval between the three replicas;
- the scheduled runs that skipped (lock held, or synced within the interval) counted, more than one
  replica among those that completed runs, and no traceback in any log.

Prints the figures, ``RATIO`` lines, writes them as JSON with ``--report``; exits 1 if a check failed.

    python -m bench.replicas [--quick] [-n N] [--rate R] [--interval S]
        [--db-url URL | --pg ADMIN_URL] [--amqp-url URL] [--report PATH] [--workdir DIR]

``--db-url`` is an empty database the caller owns (the test suite's), else one is created on the
server of ``--pg`` and dropped; ``--amqp-url`` a vhost the caller owns, else one is made with
``rabbitmqctl`` and deleted. Full size: 50,000 notifications at 500/s, a 10 s interval; ``--quick``
(CI) 1,000 at 200/s, a 3 s interval.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from bench.replica_nodes import (
    AMQP,
    CLOUDS,
    NOTIFY_CLOUD,
    PUBLISHER,
    Replica,
    delete_queue,
    fake_cloud,
    kill_if_running,
    own_vhost,
    replica_env,
    wait_until,
    write_clouds,
)
from bench.scratch_db import scratch_database

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
MIN_GAP = 0.8  # the scheduler's interval × (1 − 2 × jitter)
STALE = "never ended: the replica that ran it stopped"
CANCELLED = "was cancelled while"


@dataclass
class Sizes:
    notifications: int
    rate: float
    interval_s: int  # whole seconds, as the clouds config takes it


@dataclass
class Report:
    """What the run measured; ``problems`` lists each check that failed (empty: passed)."""

    notifications: int
    rate: float
    interval_s: float
    load_average: float = 0.0
    published_s: float = 0.0
    stored_s: float = 0.0
    events: int = 0
    distinct: int = 0
    projection_rows: int = 0
    lost: int = 0
    doubled: int = 0
    killed_mid_sync_run: str | None = None
    victim: int | None = None  # the replica SIGKILLed twice (the next one is SIGTERMed)
    stale_runs: int = 0
    runs_left_running: int = 0
    runs: dict[str, int] = field(default_factory=dict)
    cancelled_runs: int = 0
    other_failed_runs: int = 0
    gap_min_intervals: float = 0.0
    gap_mean_intervals: float = 0.0
    gap_max_intervals: float = 0.0
    runs_per_interval: float = 0.0
    skipped: float = 0.0
    replicas_that_synced: int = 0
    restarts_s: list[float] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


# -- the campaign ----------------------------------------------------------------------------------------


def count_events(db: psycopg.Connection[Any]) -> tuple[int, int]:
    row = db.execute(
        "SELECT count(*), count(DISTINCT resource_id) FROM events WHERE cloud = %s", [NOTIFY_CLOUD]
    ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def kill_mid_sync(
    replicas: list[Replica], db: psycopg.Connection[Any], timeout_s: float
) -> tuple[Replica, str] | None:
    """SIGKILL the first replica seen running a sync (a ``running`` row whose start it logged); it
    and the run's id, or None if no run was seen within ``timeout_s``. Whichever replica it is: the
    0.8 rule leaves each one's share of the runs to the drift of their phases."""
    found: list[tuple[Replica, str]] = []

    def a_run_is_going() -> bool:
        running = [str(r[0]) for r in db.execute("SELECT id FROM sync_runs WHERE status = 'running'")]
        for replica in replicas:
            text = replica.log.read_text(errors="replace")
            found.extend((replica, run_id) for run_id in running if f"sync_run_id={run_id} " in text)
        return bool(found)

    if not wait_until(a_run_is_going, timeout_s, step_s=0.05):
        return None
    found[0][0].kill()
    return found[0]


def note_end(process: subprocess.Popen[bytes], into: list[float]) -> None:
    """Wait for ``process`` (in a thread of its own) and note when it ended."""
    process.wait()
    into.append(time.monotonic())


def restart(replica: Replica) -> float:
    began = time.monotonic()
    replica.start()
    replica.wait_ready()
    return time.monotonic() - began


def run_campaign(sizes: Sizes, db_url: str, amqp_url: str, work: Path) -> Report:
    report = Report(sizes.notifications, sizes.rate, sizes.interval_s, load_average=os.getloadavg()[0])
    unique = uuid.uuid4().hex[:8]
    exchange, queue = f"bench-nova-{unique}", f"bench-replicas-{unique}"
    rng = random.Random(17)
    with ExitStack() as stack, psycopg.connect(db_url, autocommit=True) as db:
        stack.callback(delete_queue, amqp_url, queue, exchange)
        base_url = stack.enter_context(fake_cloud(compute_delay_s=0.2))
        cloud_files = write_clouds(work, base_url, sizes.interval_s)
        replicas = [
            Replica(
                i, replica_env(i, work, db_url, amqp_url, exchange, queue, cloud_files), work / f"r{i}.log"
            )
            for i in range(3)
        ]
        for replica in replicas:
            stack.callback(replica.kill_if_running)
        for replica in replicas:  # all at once: their migrations race, under the migration lock
            replica.start()
        for replica in replicas:
            replica.wait_ready()
        window_from = datetime.now(UTC)
        publisher = subprocess.Popen(
            [
                sys.executable,
                str(PUBLISHER),
                amqp_url.replace("amqp://", "rabbit://", 1),
                exchange,
                str(sizes.notifications),
                str(sizes.rate),
            ],
            stdout=subprocess.PIPE,
            stderr=(work / "publisher.log").open("ab"),
        )
        stack.callback(kill_if_running, publisher)
        began = time.monotonic()
        published_at: list[float] = []
        threading.Thread(target=note_end, args=(publisher, published_at), daemon=True).start()
        publishing_s = sizes.notifications / sizes.rate
        # oslo drops what it publishes before its first connection opened: faults start after that.
        wait_until(lambda: count_events(db)[1] > 0, 60)
        killed = kill_mid_sync(replicas, db, timeout_s=max(30.0, 6 * sizes.interval_s))
        if killed is None:
            report.problems.append("no replica ran a sync to be killed in the middle of")
            replicas[0].kill()
        victim = killed[0] if killed else replicas[0]
        report.killed_mid_sync_run = killed[1] if killed else None
        report.victim = victim.index
        stopped = replicas[(victim.index + 1) % len(replicas)]
        report.restarts_s.append(restart(victim))
        time.sleep(max(0.0, began + publishing_s * 0.4 - time.monotonic()) + rng.uniform(0, 1))
        victim.kill()
        report.restarts_s.append(restart(victim))
        time.sleep(max(0.0, began + publishing_s * 0.6 - time.monotonic()))
        code = stopped.stop()
        report.exit_codes.append(code)
        report.restarts_s.append(restart(stopped))
        # A loaded host publishes well below the asked rate (one oslo Notifier, one publish at a time).
        try:
            if publisher.wait(timeout=publishing_s * 10 + 300) != 0:
                report.problems.append(f"the publisher exited with {publisher.returncode}")
        except subprocess.TimeoutExpired:
            report.problems.append("the publisher did not finish within ten times its nominal time")
            publisher.kill()
            published_at.append(time.monotonic())
        wait_until(lambda: count_events(db)[1] >= sizes.notifications, 120 + sizes.notifications / 200)
        report.stored_s = time.monotonic() - began
        wait_until(lambda: bool(published_at), 5)
        report.published_s = published_at[0] - began
        # A whole interval more, so that the clouds' runs after the last restart are on the record.
        time.sleep(sizes.interval_s * 1.2)
        report.skipped = sum(r.metric("tally_sync_runs_total", 'status="skipped"') for r in replicas)
        window_to = datetime.now(UTC)
        report.exit_codes.extend(r.stop() for r in replicas)
        judge(report, db, replicas, window_from, window_to)
    return report


def judge(
    report: Report,
    db: psycopg.Connection[Any],
    replicas: list[Replica],
    window_from: datetime,
    window_to: datetime,
) -> None:
    """Read the record and fill in the figures and the problems."""
    report.events, report.distinct = count_events(db)
    projection = db.execute(
        "SELECT count(*) FROM current_resources WHERE cloud = %s", [NOTIFY_CLOUD]
    ).fetchone()
    report.projection_rows = int(projection[0]) if projection else 0
    report.lost = report.notifications - report.distinct
    report.doubled = report.events - report.distinct
    if report.lost or report.doubled or report.projection_rows != report.notifications:
        report.problems.append(
            f"events: {report.lost} lost, {report.doubled} doubled, {report.projection_rows} projection rows "
            f"of {report.notifications}"
        )
    if any(code != 0 for code in report.exit_codes):
        report.problems.append(f"a SIGTERM drain did not exit 0: {report.exit_codes}")
    gaps: list[float] = []
    for cloud in CLOUDS:
        rows = db.execute(
            "SELECT id, started_at, completed_at, status, stats FROM sync_runs WHERE cloud = %s "
            "ORDER BY started_at",
            [cloud],
        ).fetchall()
        ended = [r for r in rows if r[2] is not None]
        report.runs[cloud] = len(ended)
        errors = [" ".join(r[4].get("errors", [])) for r in rows if r[3] == "failed"]
        report.stale_runs += sum(STALE in e for e in errors)
        report.cancelled_runs += sum(CANCELLED in e for e in errors)
        report.other_failed_runs += sum(STALE not in e and CANCELLED not in e for e in errors)
        report.runs_left_running += sum(r[3] == "running" for r in rows)
        starts = [r[1] for r in ended if window_from <= r[1] <= window_to]
        gaps += [(b - a).total_seconds() / report.interval_s for a, b in itertools.pairwise(starts)]
    if report.killed_mid_sync_run is not None:
        row = db.execute(
            "SELECT status, completed_at, stats FROM sync_runs WHERE id = %s", [report.killed_mid_sync_run]
        ).fetchone()
        if row is None or row[0] != "failed" or row[1] is not None or STALE not in str(row[2]):
            report.problems.append(f"the run killed in the middle is not failed as stale: {row}")
    if report.runs_left_running:
        report.problems.append(f"{report.runs_left_running} sync run(s) left running")
    if report.other_failed_runs:
        report.problems.append(f"{report.other_failed_runs} sync run(s) failed for another reason")
    if len(gaps) < 2:
        report.problems.append(f"too few runs to judge the spacing: {report.runs}")
    else:
        report.gap_min_intervals, report.gap_max_intervals = min(gaps), max(gaps)
        report.gap_mean_intervals = sum(gaps) / len(gaps)
        report.runs_per_interval = 1 / report.gap_mean_intervals
        if report.gap_min_intervals < MIN_GAP - 0.01:
            report.problems.append(f"two runs of a cloud {report.gap_min_intervals:.2f} intervals apart")
        if report.gap_max_intervals > 3.0:
            report.problems.append(f"a cloud went {report.gap_max_intervals:.2f} intervals without a run")
        if not 0.75 <= report.runs_per_interval <= 1.3:
            report.problems.append(f"{report.runs_per_interval:.2f} runs per interval, not about one")
    if report.skipped < 1:
        report.problems.append("no scheduled run was counted as skipped")
    synced_by = [
        r for r in replicas if re.search(r"sync completed cloud=", r.log.read_text(errors="replace"))
    ]
    report.replicas_that_synced = len(synced_by)
    if report.replicas_that_synced < 2:
        report.problems.append("one replica ran every sync: the jitter did not spread them")
    for replica in replicas:
        if "Traceback" in replica.log.read_text(errors="replace"):
            report.problems.append(f"a traceback in {replica.log}")


def print_report(report: Report) -> None:
    print(
        f"{report.notifications} notifications at {report.rate:g}/s, interval {report.interval_s:g} s, "
        f"load average {report.load_average:.1f} at the start"
    )
    print(
        f"published in {report.published_s:.1f} s, all stored after {report.stored_s:.1f} s "
        f"({report.stored_s - report.published_s:.1f} s after the last was published)"
    )
    print(
        f"events {report.events} (distinct {report.distinct}, projection rows {report.projection_rows}): "
        f"lost {report.lost}, doubled {report.doubled}"
    )
    print(
        f"sync runs ended {report.runs}; stale (failed by the next holder) {report.stale_runs}, "
        f"cancelled by SIGTERM {report.cancelled_runs}, other failures {report.other_failed_runs}, "
        f"left running {report.runs_left_running}"
    )
    print(
        f"gaps between a cloud's runs, in intervals: min {report.gap_min_intervals:.2f}, mean "
        f"{report.gap_mean_intervals:.2f}, max {report.gap_max_intervals:.2f}; skipped {report.skipped:.0f}; "
        f"replicas that synced {report.replicas_that_synced}"
    )
    print(
        f"restarts took {', '.join(f'{s:.1f}' for s in report.restarts_s)} s; exit codes {report.exit_codes}"
    )
    for problem in report.problems:
        print(f"PROBLEM {problem}")
    print(f"RATIO replicas_lost={report.lost}")
    print(f"RATIO replicas_doubled={report.doubled}")
    print(f"RATIO replicas_runs_per_interval={report.runs_per_interval:.2f}")
    print(f"RATIO replicas_min_gap_intervals={report.gap_min_intervals:.2f}")
    print(f"RATIO replicas_stored_after_published_s={report.stored_s - report.published_s:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small run for CI")
    parser.add_argument("-n", type=int, default=None, help="notifications (50000; 1000 with --quick)")
    parser.add_argument("--rate", type=float, default=None, help="notifications/s (500; 200 with --quick)")
    parser.add_argument("--interval", type=int, default=None, help="sync interval s (10; 3 with --quick)")
    parser.add_argument("--db-url", help="an empty database of the caller's (default: one of our own)")
    parser.add_argument("--pg", default=PG_ADMIN, help="the server's admin URL, for a database of our own")
    parser.add_argument("--amqp-url", help="a vhost of the caller's (default: one of our own)")
    parser.add_argument("--report", type=Path, help="write the figures as JSON here")
    parser.add_argument("--workdir", type=Path, help="state directories and logs (default: a temporary one)")
    args = parser.parse_args()
    sizes = Sizes(
        args.n or (1000 if args.quick else 50_000),
        args.rate or (200.0 if args.quick else 500.0),
        args.interval or (3 if args.quick else 10),
    )
    with ExitStack() as stack:
        db_url = args.db_url or stack.enter_context(scratch_database(args.pg, "tally_bench_replicas"))[1]
        amqp_url = args.amqp_url or stack.enter_context(own_vhost(AMQP))
        work = args.workdir or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="tally-replicas-"))
        )
        work.mkdir(parents=True, exist_ok=True)
        report = run_campaign(sizes, db_url, amqp_url, work)
    print_report(report)
    if args.report is not None:
        args.report.write_text(json.dumps(asdict(report), indent=2))
    sys.exit(1 if report.problems else 0)


if __name__ == "__main__":
    main()
