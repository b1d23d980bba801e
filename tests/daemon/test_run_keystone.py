"""``tally run`` taking keystone tokens: a clouds config entry's ``keystone`` names the clouds.yaml
entry whose keystone (the fake cloud's) checks them, and a tenant reads what a sync booked.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import yaml
from daemon_fakecloud import fake_cloud, write_clouds_yaml
from daemon_support import daemon_env, free_port, running_daemon, wait_until_ready

from tally.simulator.fakecloud import ADMIN_PASSWORD, ADMIN_USER

INTERNAL = "internal-secret-for-tests"


def admin_token(base_url: str) -> str:
    body = {
        "auth": {
            "identity": {
                "methods": ["password"],
                "password": {
                    "user": {"name": ADMIN_USER, "domain": {"name": "Default"}, "password": ADMIN_PASSWORD}
                },
            },
            "scope": {"project": {"name": "service", "domain": {"name": "Default"}}},
        }
    }
    answer = httpx.post(f"{base_url}/v3/auth/tokens", json=body, timeout=10)
    assert answer.status_code == 201
    return answer.headers["X-Subject-Token"]


def test_the_daemon_reads_with_a_keystone_token_its_cloud_names(tmp_path: Path) -> None:
    config = tmp_path / "tally-clouds.yaml"
    entry = {
        "cloud": "os-fake",
        "platform": "openstack",
        "adapter": "openstack",
        "adapter_config": {"os_cloud": "admin"},
        "sync_interval_s": 0,
        "keystone": {"os_cloud": "admin"},
    }
    config.write_text(yaml.safe_dump({"clouds": [entry]}))
    with fake_cloud() as cloud_url:
        env = daemon_env(
            tmp_path / "state",
            free_port(),
            TALLY_REPORTING_INTERNAL_TOKEN=INTERNAL,
            TALLY_REPORTING_CLOUDS_CONFIG=str(config),
            TALLY_REPORTING_SYNC_SETTLE_S="0",
            OS_CLIENT_CONFIG_FILE=str(write_clouds_yaml(tmp_path, cloud_url)),
        )
        with running_daemon(env) as daemon, httpx.Client(base_url=daemon.base_url, timeout=30) as client:
            wait_until_ready(daemon.base_url)
            synced = client.post("/internal/sync/os-fake", headers={"Authorization": f"Bearer {INTERNAL}"})
            assert synced.status_code == 200, synced.text
            token = admin_token(cloud_url)
            listed = client.get("/api/v1/resources", headers={"X-Auth-Token": token})
            assert listed.status_code == 200
            assert {r["resource_type"] for r in listed.json()["items"]} >= {"instance", "volume"}
            assert client.get("/api/v1/resources", headers={"X-Auth-Token": "gAAAAAnope"}).status_code == 401
            metrics = client.get("/metrics").text
            assert daemon.stop() == 0, daemon.log
    assert 'tally_keystone_validations_total{cloud="os-fake",outcome="valid"} 1.0' in metrics
    assert token not in daemon.log
