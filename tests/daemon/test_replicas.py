"""Three ``tally run`` replicas on the suite's PostgreSQL database and a quorum queue on its vhost, one
SIGKILLed twice (once in the middle of a sync) and one SIGTERMed, each started again: nothing lost,
nothing doubled, the killed run failed by the next holder, and each cloud synced about once an interval
between the three.

The campaign is ``bench/replicas.py`` (its docstring tells the steps), run here at CI size on the
fixtures' database and vhost; this test reads the database itself afterwards. The full size is
``python -m bench.replicas`` (50,000 notifications; figures in docs/benchmarks.md, "replicas");
``TALLY_TEST_REPLICA_NOTIFICATIONS`` sets this test's count.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

pytestmark = [pytest.mark.postgres, pytest.mark.rabbitmq, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
NOTIFICATIONS = int(os.environ.get("TALLY_TEST_REPLICA_NOTIFICATIONS", "3000"))
INTERVAL_S = 4


def test_three_replicas_killed_and_stopped_lose_and_double_nothing(
    pg_url: str, amqp_url: str, tmp_path: Path
) -> None:
    pytest.importorskip("oslo_messaging")
    report_path = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.replicas",
            "-n",
            str(NOTIFICATIONS),
            "--rate",
            "150",
            "--interval",
            str(INTERVAL_S),
            "--db-url",
            pg_url,
            "--amqp-url",
            amqp_url,
            "--report",
            str(report_path),
            "--workdir",
            str(tmp_path / "work"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    report = json.loads(report_path.read_text())
    assert report["problems"] == []

    with psycopg.connect(pg_url) as db:
        [(rows, distinct)] = db.execute(
            "SELECT count(*), count(DISTINCT resource_id) FROM events WHERE cloud = 'os-notify'"
        ).fetchall()
        assert (rows, distinct) == (NOTIFICATIONS, NOTIFICATIONS)  # 0 lost, 0 doubled
        runs = db.execute("SELECT id::text, cloud, status, completed_at, stats FROM sync_runs").fetchall()
    assert {cloud for _, cloud, *_ in runs} == {"os-r1", "os-r2"}
    assert not [r for r in runs if r[2] == "running"]
    [killed] = [r for r in runs if r[0] == report["killed_mid_sync_run"]]
    assert (killed[2], killed[3]) == ("failed", None)
    assert killed[4]["errors"][0].startswith(
        f"sync run {killed[0]} never ended: the replica that ran it stopped"
    )

    # Between the three, each cloud about once an interval: never two runs closer than the rule's gap.
    assert report["gap_min_intervals"] >= 0.8 - 0.01
    assert 0.75 <= report["runs_per_interval"] <= 1.3
    assert report["skipped"] >= 1 and report["replicas_that_synced"] >= 2
    assert report["exit_codes"] == [0, 0, 0, 0]  # the SIGTERMed replica's drain, then all three at the end
