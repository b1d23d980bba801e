"""``tally run`` with several clouds: first runs staggered by name, one run at a time under a cap of 1,
and each cloud's health on ``/readyz`` and in ``/metrics``.

Five scheduled clouds on a 6 s interval: cloud ``i`` by name first syncs ``1.2 * i`` s (±0.12) after
start. Four reach the fake OpenStack cloud (the same account, as four clouds of their own names); the
fifth has an adapter_config without its os_cloud, so every run of it fails.
"""

from __future__ import annotations

import sqlite3
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx
import yaml
from daemon_fakecloud import fake_cloud, write_clouds_yaml
from daemon_support import daemon_env, free_port, running_daemon, wait_until_ready

from tally.core import parse_instant

CLOUDS = ["os-broken", "os-c1", "os-c2", "os-c3", "os-c4"]  # in name order
INTERVAL_S = 6


def write_config(directory: Path) -> Path:
    config = directory / "tally-clouds.yaml"
    entries = [
        {
            "cloud": cloud,
            "platform": "openstack",
            "adapter": "openstack",
            "adapter_config": {} if cloud == "os-broken" else {"os_cloud": "admin"},
            "sync_interval_s": INTERVAL_S,
        }
        for cloud in CLOUDS
    ]
    config.write_text(yaml.safe_dump({"clouds": entries}))
    return config


def clouds_check(base_url: str) -> dict[str, Any]:
    check: dict[str, Any] = httpx.get(f"{base_url}/readyz", timeout=5).json()["checks"]["clouds"]
    return check


def test_many_clouds_start_staggered_run_under_the_cap_and_show_their_health(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with fake_cloud() as base_url:
        clouds_yaml = write_clouds_yaml(tmp_path, base_url)
        env = daemon_env(
            state,
            free_port(),
            TALLY_REPORTING_INTERNAL_TOKEN="internal-secret-for-tests",
            TALLY_REPORTING_CLOUDS_CONFIG=str(write_config(tmp_path)),
            TALLY_REPORTING_SYNC_SETTLE_S="0",
            TALLY_REPORTING_SYNC_MAX_CONCURRENT="1",
            OS_CLIENT_CONFIG_FILE=str(clouds_yaml),
        )
        with running_daemon(env) as daemon:
            wait_until_ready(daemon.base_url)
            deadline = time.monotonic() + 40
            while True:
                check = clouds_check(daemon.base_url)
                health = check["clouds"]
                if (
                    all(health[c]["last_completed_run"] for c in CLOUDS[1:])
                    and health["os-broken"]["failing"]
                ):
                    break
                assert time.monotonic() < deadline, f"not every cloud synced: {check}"
                time.sleep(0.3)
            metrics = httpx.get(f"{daemon.base_url}/metrics", timeout=5).text
            assert daemon.stop() == 0, daemon.log
    assert check["ok"] is True  # one failing cloud does not hold the others back
    assert check["detail"].startswith("5 cloud(s) configured; 1 failing: os-broken; adapter_config refused")
    assert sorted(health) == CLOUDS
    assert all(health[c]["failing"] is False for c in CLOUDS[1:])
    broken = health["os-broken"]
    # The run's own errors stay in its row: /readyz needs no credential.
    assert broken["last_error_run"] and "os_cloud" not in str(broken)
    assert "tally_sync_max_concurrent 1.0" in metrics
    last_error = [
        line for line in metrics.splitlines() if 'last_error_timestamp_seconds{cloud="os-broken"}' in line
    ]
    assert float(last_error[0].split()[-1]) > 0
    assert 'tally_sync_last_error_timestamp_seconds{cloud="os-c1"} 0.0' in metrics
    assert "first scheduled sync cloud=os-c4 in_s=4." in daemon.log

    with sqlite3.connect(state / "tally.sqlite3") as db:
        rows = db.execute(
            "SELECT cloud, started_at, completed_at FROM sync_runs ORDER BY started_at"
        ).fetchall()
    runs = [(cloud, parse_instant(started), parse_instant(completed)) for cloud, started, completed in rows]
    firsts: dict[str, Any] = {}
    for cloud, started, _ in runs:
        firsts.setdefault(cloud, started)
    assert sorted(firsts, key=lambda c: firsts[c]) == CLOUDS  # first runs in name order
    spread = (firsts["os-c4"] - firsts["os-broken"]).total_seconds()
    assert 4.0 < spread < INTERVAL_S  # 4.8 s ± 0.12 plus what the runs before took, within one interval
    # Under a cap of 1 no two runs of the daemon overlap.
    for (_, _, ended), (_, next_started, _) in pairwise(runs):
        assert ended <= next_started
