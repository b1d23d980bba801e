"""``tally run`` with a clouds config: per-cloud schedulers and POST /internal/sync/{cloud}.

The fake OpenStack cloud (keystone and the five listing APIs, plus the simulator's ``GET /clock``) is
served by the test in a thread of its own, frozen at one virtual instant; the daemon reaches it
through a clouds.yaml named by OS_CLIENT_CONFIG_FILE, as in production.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import httpx
import yaml
from daemon_fakecloud import fake_cloud, write_clouds_yaml
from daemon_support import daemon_env, free_port, running_daemon, wait_until_ready

INTERNAL = "internal-secret-for-tests"


def write_configs(directory: Path, base_url: str) -> tuple[Path, Path]:
    """clouds.yaml (the admin account of the fake) and the strict clouds config of three clouds."""
    clouds_yaml = write_clouds_yaml(directory, base_url)
    config = directory / "tally-clouds.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "clouds": [
                    # Only on request: the POST below is the one run.
                    {
                        "cloud": "os-fake",
                        "platform": "openstack",
                        "adapter": "openstack",
                        "adapter_config": {"os_cloud": "admin"},
                        "sync_interval_s": 0,
                    },
                    # Scheduled: a run at start, told the fake's clock instant.
                    {
                        "cloud": "os-told",
                        "platform": "openstack",
                        "adapter": "openstack",
                        "adapter_config": {"os_cloud": "admin"},
                        "sync_interval_s": 3600,
                    },
                    # adapter_config without its required os_cloud: refused, yet the daemon starts.
                    {
                        "cloud": "os-broken",
                        "platform": "openstack",
                        "adapter": "openstack",
                        "adapter_config": {},
                        "sync_interval_s": 0,
                    },
                ]
            }
        )
    )
    return clouds_yaml, config


def test_sync_route_and_schedulers_against_the_fake_cloud(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with fake_cloud() as base_url:
        clouds_yaml, config = write_configs(tmp_path, base_url)
        env = daemon_env(
            state,
            free_port(),
            TALLY_REPORTING_INTERNAL_TOKEN=INTERNAL,
            TALLY_REPORTING_CLOUDS_CONFIG=str(config),
            TALLY_REPORTING_SYNC_CLOCK_URL=f"{base_url}/clock",
            TALLY_REPORTING_SYNC_SETTLE_S="0",
            TALLY_REPORTING_SYNC_BUDGET_S="20",
            OS_CLIENT_CONFIG_FILE=str(clouds_yaml),
        )
        with running_daemon(env) as daemon:
            checks = wait_until_ready(daemon.base_url)
            clouds = checks["clouds"]
            assert clouds["ok"] is True
            assert "cloud os-broken:" in str(clouds["detail"]) and "os_cloud" in str(clouds["detail"])
            auth = {"Authorization": f"Bearer {INTERNAL}"}
            with httpx.Client(base_url=daemon.base_url, timeout=40) as client:
                synced = client.post("/internal/sync/os-fake", headers=auth)
                assert synced.status_code == 200, synced.text
                answer = synced.json()
                assert answer["stats"] == {"created": 2, "updated": 0, "deleted": 0}
                assert answer["sync_run_id"]
                broken = client.post("/internal/sync/os-broken", headers=auth)
                assert broken.status_code == 500
                assert "os_cloud" not in broken.text  # the reason is in the row and the log only
                assert client.post("/internal/sync/os-nowhere", headers=auth).status_code == 404
                assert client.post("/internal/sync/os-fake").status_code == 401
                deadline = time.monotonic() + 30
                while 'tally_sync_runs_total{cloud="os-told",status="completed"} 1.0' not in (
                    metrics := client.get("/metrics").text
                ):
                    assert time.monotonic() < deadline, "the scheduled run of os-told never completed"
                    time.sleep(0.2)
            assert 'tally_sync_cloud_config_invalid{cloud="os-broken"} 1.0' in metrics
            assert daemon.stop() == 0, daemon.log
    assert "actors=store,current-resources,http,sync-scheduler:os-broken," in daemon.log
    assert "sync-scheduler:os-fake,sync-scheduler:os-told" in daemon.log
    with sqlite3.connect(state / "tally.sqlite3") as db:
        runs = dict(db.execute("SELECT cloud, status FROM sync_runs WHERE cloud <> 'os-told'").fetchall())
        [(told_started,)] = db.execute("SELECT started_at FROM sync_runs WHERE cloud = 'os-told'").fetchall()
    assert runs == {"os-fake": "completed", "os-broken": "failed"}
    # Told-instant mode: the scheduled run's one clock is min(virtual_now, period_to) of GET /clock.
    assert str(told_started).startswith("2026-07-01T06:00:00")
