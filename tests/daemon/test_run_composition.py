"""What ``tally run`` hosts for its settings, seen from outside: a subprocess answering over HTTP.

- embedded defaults: the store (SQLite in TALLY_STATE_DIR, migrated at start) and the Reporting API,
  with /healthz, /readyz and /metrics on the same port;
- TALLY_REPORTING_MIGRATE_ON_START=false: /readyz 503 while the schema is behind;
- TALLY_REPORTING_ENABLED=false: the health endpoints alone, no store;
- settings that must refuse startup with one line.
The collector and the reconciliation have tests of their own in test_run_collector.py and
test_run_reconcile.py.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from daemon_support import daemon_env, free_port, running_daemon, secret, tally, wait_until_ready

INTERNAL = "internal-secret-for-tests"


def instance_event(resource_id: str = "vm-1") -> dict[str, object]:
    return {
        "event_id": f"{resource_id}-create",
        "timestamp": "2026-03-01T10:00:00Z",
        "event_type": "compute.instance.create.end",
        "platform": "openstack",
        "cloud": "os-dev",
        "resource_type": "instance",
        "resource_id": resource_id,
        "project_id": "p-1",
        "payload": {"state": "active", "size": {"vcpus": 2, "ram_gb": 4, "disk_gb": 20, "flavor": "m1"}},
    }


def test_embedded_defaults_host_the_reporting_api_over_the_sqlite_store(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = daemon_env(
        state, free_port(), TALLY_REPORTING_INTERNAL_TOKEN=INTERNAL, TALLY_REPORTING_METRICS_REFRESH_S="1"
    )
    with running_daemon(env) as daemon:
        checks = wait_until_ready(daemon.base_url)
        assert checks["store"] == {"ok": True, "detail": "sqlite answers and takes writes"}
        assert checks["schema"]["ok"] is True
        assert (state / "tally.sqlite3").is_file()

        ingest = secret(env, "ingest-credential", "create", "--platform", "openstack", "--cloud", "os-dev")
        admin = secret(env, "token", "create", "--role", "admin")
        with httpx.Client(base_url=daemon.base_url, timeout=10) as client:
            posted = client.post(
                "/api/v1/events", json=[instance_event()], headers={"Authorization": f"Bearer {ingest}"}
            )
            assert posted.status_code == 200, posted.text
            assert posted.json() == {"accepted": 1, "duplicates": 0, "rejected": []}
            listed = client.get("/api/v1/resources", headers={"Authorization": f"Bearer {admin}"})
            assert listed.status_code == 200
            [row] = listed.json()["items"]
            assert (row["resource_id"], row["state"], row["cloud"]) == ("vm-1", "active", "os-dev")
            assert client.get("/api/v1/resources").status_code == 401  # the API's auth is on
            # No clouds config: every cloud is unknown.
            unknown = client.post("/internal/sync/os-dev", headers={"Authorization": f"Bearer {INTERNAL}"})
            assert unknown.status_code == 404
            # The current-resources actor refreshes the gauge from the store every second here.
            gauge = (
                'tally_current_resources{cloud="os-dev",platform="openstack",resource_type="instance",'
                'state="active"} 1.0'
            )
            deadline = time.monotonic() + 10
            while gauge not in (metrics := client.get("/metrics").text):
                assert time.monotonic() < deadline, "the current resources gauge was never refreshed"
                time.sleep(0.2)
        assert (
            'tally_events_ingested_total{cloud="os-dev",event_type="compute.instance.create.end",'
            'platform="openstack",resource_type="instance",source="collector"} 1.0'
        ) in metrics
        assert 'tally_actor_restarts_total{actor="store"} 0.0' in metrics
        assert daemon.stop() == 0, daemon.log
    assert "actors=store,current-resources,http" in daemon.log
    assert "no internal token" not in daemon.log


@pytest.mark.postgres
def test_the_store_is_postgresql_when_a_db_url_is_set(tmp_path: Path, pg_url: str) -> None:
    state = tmp_path / "state"
    env = daemon_env(state, free_port(), TALLY_REPORTING_DB_URL=pg_url, TALLY_REPORTING_DB_MAX_CONNS="2")
    with running_daemon(env) as daemon:
        checks = wait_until_ready(daemon.base_url)
        assert checks["store"] == {"ok": True, "detail": "postgresql answers and takes writes"}
        assert checks["schema"]["ok"] is True
        admin = secret(env, "token", "create", "--role", "admin")
        listed = httpx.get(
            f"{daemon.base_url}/api/v1/resources", headers={"Authorization": f"Bearer {admin}"}
        )
        assert listed.status_code == 200 and listed.json()["items"] == []
        assert daemon.stop() == 0, daemon.log
    assert not (state / "tally.sqlite3").exists()


def test_readyz_is_503_while_the_schema_is_behind_and_migrations_are_off(tmp_path: Path) -> None:
    env = daemon_env(tmp_path / "state", free_port(), TALLY_REPORTING_MIGRATE_ON_START="false")
    with running_daemon(env) as daemon:
        answer = httpx.get(f"{daemon.base_url}/readyz")
        assert answer.status_code == 503
        checks = answer.json()["checks"]
        assert checks["store"]["ok"] is True  # the database answers; its schema is what is missing
        assert checks["schema"]["ok"] is False
        assert "run `tally migrate up`" in checks["schema"]["detail"]
        migrated = tally(env, "migrate", "up")
        assert migrated.returncode == 0, migrated.stderr
        assert wait_until_ready(daemon.base_url)["schema"]["ok"] is True
        assert daemon.stop() == 0, daemon.log
    # Enforced auth and no internal token: it starts, and says why /internal answers 401.
    assert "no internal token: TALLY_REPORTING_INTERNAL_TOKEN is unset" in daemon.log


def test_reporting_disabled_serves_only_the_health_endpoints(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = daemon_env(state, free_port(), TALLY_REPORTING_ENABLED="false")
    with running_daemon(env) as daemon:
        checks = wait_until_ready(daemon.base_url)
        assert set(checks) == {"actors"}
        assert httpx.get(f"{daemon.base_url}/api/v1/resources").status_code == 404
        assert httpx.get(f"{daemon.base_url}/metrics").status_code == 200
        assert daemon.stop() == 0, daemon.log
    assert not (state / "tally.sqlite3").exists()  # nothing needed the store, so none was opened


def test_an_oidc_jwks_url_refuses_startup_with_one_line(tmp_path: Path) -> None:
    env = daemon_env(
        tmp_path / "state", free_port(), TALLY_REPORTING_OIDC_JWKS_URL="https://idp.example/jwks"
    )
    done = tally(env, "run")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "tally: TALLY_REPORTING_OIDC_JWKS_URL is set, but OIDC is not supported: unset it"
    )
    assert not (tmp_path / "state").exists()


def test_a_plain_http_reporting_url_for_the_collector_refuses_startup(tmp_path: Path) -> None:
    env = daemon_env(
        tmp_path / "state",
        free_port(),
        TALLY_OSC_AMQP_URL="amqp://guest:guest@127.0.0.1:1/",  # never contacted: refused before
        TALLY_OSC_REPORTING_URL="http://reporting.example:8080",
    )
    done = tally(env, "run")
    assert done.returncode == 2
    last = done.stderr.splitlines()[-1]
    assert last.startswith("tally: TALLY_OSC_REPORTING_URL 'http://reporting.example:8080' is plain http")
    assert not (tmp_path / "state").exists()
