"""Two ``tally run`` replicas on one PostgreSQL database: the one holding a cloud's sync lock is
SIGSTOPped in the middle of a sync, and the other takes the cloud within the lease.

The replicas share the test's own database and the simulator's fake cloud (each compute call slowed,
so that a sync lasts long enough to be stopped in the middle), with a 2 s interval and a lease
(``TALLY_REPORTING_SYNC_LOCK_LEASE_S``) of 4 s. The stopped replica's session keeps the lock until
the server ends it as idle; the other replica skips its runs meanwhile (``lock held``, the gauge
``tally_sync_lock_held_seconds`` counting), then syncs the cloud. Woken with SIGCONT, the stopped one
learns at its next renewal that it lost the lock: its run is cancelled, and it goes on as a healthy
replica. Each resource's correction is booked once.

The second test holds the lock from a session of the test's own, which no lease bounds (a session
of a person, or a server before PostgreSQL 14): past the budget and the lease the replica says so
once at WARNING, the gauge counts on, and once the lock is free it syncs and says that too.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from bench.replica_nodes import Replica, fake_cloud
from daemon_support import daemon_env, free_port

from tally.simulation.simulate import write_cloud_files
from tally.store._pg_sync_lock import _ADD_SYNC_LOCK_KEY, _TRY_SYNC_LOCK

pytestmark = [pytest.mark.postgres]

CLOUD = "os-lease"
INTERVAL_S = 2
LEASE_S = 4
BUDGET_S = 15
# A replica syncs a cloud whose holder stopped within the lease (the server ends the idle session
# LEASE_S after the holder's last renewal, at most LEASE_S after the stop) and its next tick (at most
# an interval and its jitter); 4 s for a loaded host.
TAKEOVER_BOUND_S = LEASE_S + 1.5 * INTERVAL_S + 4
HELD_WARNING = "past the budget and the lease cloud=" + CLOUD


def replica_env(
    work: Path, index: int, db_url: str, cloud_files: tuple[Path, Path], budget_s: int
) -> dict[str, str]:
    clouds_yaml, config = cloud_files
    return daemon_env(
        work / f"replica-{index}",
        free_port(),
        TALLY_REPORTING_DB_URL=db_url,
        TALLY_REPORTING_DB_MAX_CONNS="3",
        TALLY_REPORTING_CLOUDS_CONFIG=str(config),
        TALLY_REPORTING_SYNC_SETTLE_S="0",
        TALLY_REPORTING_SYNC_BUDGET_S=str(budget_s),
        TALLY_REPORTING_SYNC_LOCK_LEASE_S=str(LEASE_S),
        OS_CLIENT_CONFIG_FILE=str(clouds_yaml),
    )


def write_clouds(work: Path, base_url: str) -> tuple[Path, Path]:
    clouds_yaml, _ = write_cloud_files(work, base_url, "admin")
    config = work / "tally-clouds.yaml"
    entry = {
        "cloud": CLOUD,
        "platform": "openstack",
        "adapter": "openstack",
        "adapter_config": {"os_cloud": "admin"},
        "sync_interval_s": INTERVAL_S,
    }
    config.write_text(yaml.safe_dump({"clouds": [entry]}))
    return clouds_yaml, config


def started(stack: ExitStack, replicas: list[Replica]) -> list[Replica]:
    stack.callback(lambda: [r.kill() for r in replicas if r.proc and r.proc.poll() is None])
    for replica in replicas:
        replica.start()
    for replica in replicas:
        replica.wait_ready(timeout_s=60)
    return replicas


def wait_for(
    what: str,
    condition: Callable[[], bool],
    timeout_s: float,
    step_s: float = 0.1,
    logs: Sequence[Replica] = (),
) -> float:
    """Poll ``condition()`` until true; the seconds it took. A failure quotes the sync lines of ``logs``."""
    began = time.monotonic()
    while not condition():
        if time.monotonic() - began >= timeout_s:
            raise AssertionError(f"{what}: not within {timeout_s:g} s\n" + "\n".join(map(sync_lines, logs)))
        time.sleep(step_s)
    return time.monotonic() - began


def sync_lines(replica: Replica) -> str:
    """The last lines of ``replica``'s log about syncs and locks, for a failure's message."""
    lines = replica.log.read_text(errors="replace").splitlines()
    return f"replica {replica.index}:\n" + "\n".join([line for line in lines if "sync" in line][-15:])


def held_seconds(replica: Replica) -> float:
    return replica.metric("tally_sync_lock_held_seconds", f'cloud="{CLOUD}"')


def runs(db: psycopg.Connection[Any]) -> list[tuple[str, str]]:
    """The cloud's sync runs, oldest first: (id, status)."""
    rows = db.execute("SELECT id::text, status FROM sync_runs WHERE cloud = %s ORDER BY started_at", [CLOUD])
    return [(str(run_id), str(status)) for run_id, status in rows]


def completed_by(replica: Replica) -> int:
    return len(re.findall(rf"sync completed cloud={CLOUD}\b", replica.log.read_text(errors="replace")))


def stop_mid_sync(replicas: list[Replica], db: psycopg.Connection[Any]) -> tuple[Replica, str]:
    """SIGSTOP the first replica seen running a sync (a running row whose id it logged); it and the run."""
    found: list[tuple[Replica, str]] = []

    def a_run_is_going() -> bool:
        going = [run_id for run_id, status in runs(db) if status == "running"]
        for replica in replicas:
            text = replica.log.read_text(errors="replace")
            found.extend((replica, run_id) for run_id in going if f"sync_run_id={run_id} " in text)
        return bool(found)

    wait_for("a sync in progress", a_run_is_going, 30, step_s=0.05)
    stopped, run_id = found[0]
    assert stopped.proc is not None
    os.kill(stopped.proc.pid, signal.SIGSTOP)
    return stopped, run_id


def test_a_stopped_holder_loses_its_cloud_to_the_other_replica_within_the_lease(
    pg_url: str, tmp_path: Path
) -> None:
    with ExitStack() as stack, psycopg.connect(pg_url, autocommit=True) as db:
        base_url = stack.enter_context(fake_cloud(compute_delay_s=0.5))
        files = write_clouds(tmp_path, base_url)
        replicas = started(
            stack,
            [
                Replica(i, replica_env(tmp_path, i, pg_url, files, BUDGET_S), tmp_path / f"r{i}.log")
                for i in (0, 1)
            ],
        )

        stopped, stopped_run = stop_mid_sync(replicas, db)
        assert stopped.proc is not None
        other = replicas[1 - stopped.index]
        synced_before = completed_by(other)

        # Meanwhile the other finds the lock held: skipped runs, the gauge counting.
        highest_held = [0.0]

        def taken_over() -> bool:
            highest_held[0] = max(highest_held[0], held_seconds(other))
            return completed_by(other) > synced_before

        took = wait_for("the other replica's sync", taken_over, TAKEOVER_BOUND_S, 0.2, replicas)
        print(f"taken over {took:.1f} s after the SIGSTOP, bound {TAKEOVER_BOUND_S:g} s")
        print(f"the other replica's tally_sync_lock_held_seconds up to {highest_held[0]:.1f} s")
        assert highest_held[0] > 0, "the gauge never counted the held lock"
        assert held_seconds(other) == 0  # the lock was free again at the run that synced
        assert other.metric("tally_sync_runs_total", f'cloud="{CLOUD}",status="skipped"') >= 1
        # Taken by the lease, before the budget and the lease ran out together: no false alarm.
        assert HELD_WARNING not in other.log.read_text(errors="replace")

        os.kill(stopped.proc.pid, signal.SIGCONT)
        # Its run is cancelled at its next renewal; it stays up and ready, and syncs again in turn.
        wait_for(
            "the woken replica's run cancelled",
            lambda: (
                f"sync lock lost while its run went on cloud={CLOUD}"
                in stopped.log.read_text(errors="replace")
            ),
            10,
            logs=replicas,
        )
        stopped.wait_ready(timeout_s=10)
        # Its run failed for the lock it lost, which is what it says: the database never went away.
        woken_log = stopped.log.read_text(errors="replace")
        assert f"sync failed cloud={CLOUD} sync_run_id={stopped_run}" in woken_log, sync_lines(stopped)
        assert "the database does not answer" not in woken_log, sync_lines(stopped)
        assert other.proc is not None and other.proc.poll() is None
        # With the other replica gone (the drain exits 0), the woken one syncs the cloud by itself.
        assert other.stop() == 0
        synced_by_stopped = completed_by(stopped)
        wait_for(
            "a sync by the woken replica",
            lambda: completed_by(stopped) > synced_by_stopped,
            # Its next tick, perhaps one more (the run the other just ended counts as recent), and a
            # sync that takes seconds on a loaded host.
            4 * INTERVAL_S + 10,
            logs=[stopped],
        )
        assert stopped.stop() == 0
        record = runs(db)
        corrections = db.execute(
            "SELECT resource_id, count(*) FROM events WHERE cloud = %s AND source = 'reconciliation' "
            "GROUP BY resource_id",
            [CLOUD],
        ).fetchall()

    statuses = dict(record)
    assert statuses[stopped_run] == "failed", record
    assert "running" not in statuses.values(), record
    # The fake's server and volume, each booked once in all: no run booked what another had.
    assert len(corrections) == 2 and all(count == 1 for _, count in corrections), (
        f"{corrections}\n" + "\n".join(map(sync_lines, replicas))
    )
    for replica in replicas:
        assert "Traceback" not in replica.log.read_text(errors="replace"), replica.log


def test_a_lock_no_lease_frees_is_warned_about_past_the_budget_and_the_lease(
    pg_url: str, tmp_path: Path
) -> None:
    budget_s = 3
    threshold_s = budget_s + LEASE_S
    with ExitStack() as stack, psycopg.connect(pg_url, autocommit=True) as db:
        base_url = stack.enter_context(fake_cloud(compute_delay_s=0.0))
        files = write_clouds(tmp_path, base_url)
        [replica] = started(
            stack, [Replica(0, replica_env(tmp_path, 0, pg_url, files, budget_s), tmp_path / "r0.log")]
        )
        wait_for("a first sync", lambda: completed_by(replica) >= 1, 20)

        # The test's own session takes the cloud's lock between two runs, without a lease.
        with psycopg.connect(pg_url, autocommit=True) as hand:
            hand.execute(_ADD_SYNC_LOCK_KEY, [CLOUD, CLOUD])

            def taken() -> bool:
                row = hand.execute(_TRY_SYNC_LOCK, [CLOUD]).fetchone()
                return bool(row and row[2])

            wait_for("the lock taken by hand", taken, 10, step_s=0.05)
            held_from = time.monotonic()
            log_of = lambda: replica.log.read_text(errors="replace")  # noqa: E731
            wait_for("the WARNING", lambda: HELD_WARNING in log_of(), threshold_s + 3 * INTERVAL_S + 5)
            assert time.monotonic() - held_from >= threshold_s
            assert held_seconds(replica) >= threshold_s
            assert re.search(
                rf"WARNING .*sync lock held by another run for \d+ s, {HELD_WARNING}", log_of()
            ), log_of()
            synced_while_held = completed_by(replica)
            hand.execute("SELECT pg_advisory_unlock_all()")

        wait_for("a sync once free", lambda: completed_by(replica) > synced_while_held, 4 * INTERVAL_S + 5)
        assert held_seconds(replica) == 0
        assert replica.stop() == 0
        assert db.execute("SELECT count(*) FROM sync_runs WHERE status = 'running'").fetchone() == (0,)
    text = replica.log.read_text(errors="replace")
    assert text.count(HELD_WARNING) == 1  # once, not every skipped run
    assert "sync lock free again after" in text and f"cloud={CLOUD}" in text
