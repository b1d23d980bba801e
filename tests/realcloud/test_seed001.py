"""Seed 001, "Reconcile a cloud", rehearsed against real OpenStack services (the development cloud).

Every step with the real ``openstack`` CLI and the real ``tally``: the catalog's types (step 1 of the
restriction: each API's ``service_type`` is set by the cloud), the application credential with the
eight access rules created as the account itself, its entry in clouds.yaml with the secret in
secure.yaml beside it, ``tally check-cloud``, the account check's three commands, a clouds config
entry, a sync over HTTP through ``tally run`` and its answers 200/404/409/500, the rows in
sync_runs. Then the collector on the cloud's own vhost: real nova, cinder, glance, neutron and
octavia notifications are booked, and a sync after notifications were lost books exactly those.
"""

from __future__ import annotations

import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from daemon_support import daemon_env, free_port, running_daemon, secret, tally, wait_until_ready
from realcloud_support import (
    CLOUD,
    INTERNAL,
    RULES,
    SEVEN,
    Operator,
    Tenant,
    booked,
    clouds_config,
    sync,
    sync_runs,
    until,
)

pytestmark = pytest.mark.realcloud


@dataclass
class Seed:
    operator: Operator
    tenant: Tenant
    config: Path
    credential: dict[str, str]
    live: str  # a server of the tenant
    deleted: str  # a deleted server of the tenant


@pytest.fixture(scope="module")
def seed(devcloud: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Seed:
    directory = tmp_path_factory.mktemp("operator")
    operator = Operator(directory, devcloud)
    tenant = Tenant(devcloud)
    live = tenant.server("web-01")
    deleted = tenant.server("web-00")
    tenant.delete_server(deleted)
    # Something of the tenant in every API the account check asks to see beyond the account's project.
    tenant.volume("db-01-data")
    tenant.floating_ip()
    tenant.image("web-image")
    tenant.load_balancer("web-lb")
    suffix = uuid.uuid4().hex[:6]  # a reused cloud keeps the credentials of earlier sessions
    shown = operator.create_credential(f"tally-reconciliation-{suffix}", RULES)
    credential = {key.lower(): value for key, value in shown.items()}
    operator.add_credential_entry(CLOUD, credential["id"], credential["secret"])
    seven = {
        k.lower(): v
        for k, v in operator.create_credential(f"tally-seven-{suffix}", RULES[:4] + RULES[5:]).items()
    }
    operator.add_credential_entry(SEVEN, seven["id"], seven["secret"])
    return Seed(
        operator, tenant, clouds_config(directory), credential | {"printed": ",".join(shown)}, live, deleted
    )


def tally_env(seed: Seed, state: Path, **extra: str) -> dict[str, str]:
    return daemon_env(
        state,
        free_port(),
        TALLY_REPORTING_INTERNAL_TOKEN=INTERNAL,
        TALLY_REPORTING_CLOUDS_CONFIG=str(seed.config),
        TALLY_REPORTING_SYNC_SETTLE_S="0",
        OS_CLIENT_CONFIG_FILE=str(seed.operator.clouds_file),
        **extra,
    )


def test_the_catalog_has_the_types_the_rules_name(seed: Seed) -> None:
    listed = seed.operator(
        "--os-cloud", f"{CLOUD}-password", "catalog", "list", "-c", "Name", "-c", "Type", "-f", "yaml"
    )
    types = {row["Name"]: row["Type"] for row in yaml.safe_load(listed)}
    assert types | {"placement": "placement"} == {
        "nova": "compute",
        "cinder": "block-storage",
        "neutron": "network",
        "glance": "image",
        "octavia": "load-balancer",
        "keystone": "identity",
        "placement": "placement",
    }
    # python-openstackclient prints the keys capitalised (docs/devcloud.md); the seed shows id/secret.
    assert seed.credential["printed"] == "ID,Secret"


def test_the_apis_enforce_the_credentials_access_rules(seed: Seed, devcloud: dict[str, Any]) -> None:
    token = yaml.safe_load(seed.operator("--os-cloud", CLOUD, "token", "issue", "-f", "yaml"))["id"]
    compute = f"{devcloud['endpoints']['compute']}/v2.1"
    network = devcloud["endpoints"]["network"]

    def status(url: str) -> int:
        return httpx.get(url, headers={"X-Auth-Token": token}, timeout=60).status_code

    assert status(f"{compute}/servers/detail?all_tenants=1") == 200
    assert status(f"{network}/v2.0/floatingips") == 200
    # No rule names these: keystonemiddleware refuses them for this credential's token.
    assert status(f"{compute}/os-hypervisors") == 401
    assert status(f"{compute}/servers") == 401
    assert status(f"{network}/v2.0/networks") == 401


def test_check_cloud_and_the_account_check(seed: Seed, tmp_path: Path) -> None:
    env = tally_env(seed, tmp_path / "state")
    checked = tally(env, "check-cloud", CLOUD)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    lines = checked.stdout.strip().splitlines()
    assert lines and all(line.startswith("ok") for line in lines), checked.stdout
    # The credential without the types rule: check-cloud finds what every run would fail on.
    seven = tally(env, "check-cloud", SEVEN)
    assert seven.returncode != 0
    assert any(line.startswith("FINDING") for line in seven.stdout.splitlines()), seven.stdout

    # "Check the account": the three requests, against the same files.
    issued = yaml.safe_load(seed.operator("--os-cloud", CLOUD, "token", "issue", "-f", "yaml"))
    assert issued["project_id"] == seed.tenant.admin.current_project_id
    assert issued["user_id"] == seed.tenant.admin.current_user_id
    live = yaml.safe_load(
        seed.operator("--os-cloud", CLOUD, "server", "list", "--all-projects", "-f", "yaml")
    )
    assert seed.live in {row["ID"] for row in live}  # a server of another project than the account's
    deleted = yaml.safe_load(
        seed.operator("--os-cloud", CLOUD, "server", "list", "--all-projects", "--deleted", "-f", "yaml")
    )
    assert (seed.deleted, "DELETED") in {(row["ID"], row["Status"]) for row in deleted}


def _hold_lock(state: Path, cloud: str) -> None:
    """Another replica holds the cloud: its lease row, in the database the replicas share."""
    until_stamp = (datetime.now(UTC) + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    with sqlite3.connect(state / "tally.sqlite3") as db:
        db.execute(
            "INSERT INTO sync_locks (cloud, holder, expires_at) VALUES (?, 'replica-b', ?)",
            (cloud, until_stamp),
        )


def test_a_sync_over_http_and_its_answers(seed: Seed, tmp_path: Path) -> None:
    state = tmp_path / "state"
    with running_daemon(tally_env(seed, state)) as daemon:
        wait_until_ready(daemon.base_url)
        first = sync(daemon.base_url, CLOUD)
        assert first.status_code == 200, first.text
        assert set(first.json()) == {"sync_run_id", "stats"}
        assert first.json()["stats"]["created"] >= 3  # the tenant's two servers, the image at least
        again = sync(daemon.base_url, CLOUD)
        assert again.status_code == 200, again.text
        assert again.json()["stats"]["created"] == 0

        assert sync(daemon.base_url, "os-prod-eu2").status_code == 404
        _hold_lock(state, CLOUD)
        held = sync(daemon.base_url, CLOUD)
        assert held.status_code == 409, held.text
        failed = sync(daemon.base_url, SEVEN)
        assert failed.status_code == 500, failed.text

    runs = sync_runs(state, CLOUD)
    assert [status for status, _ in runs] == ["completed", "completed"]
    assert runs[0][1]["errors"] == [] and set(runs[0][1]["deferred"]) == {"recent", "transitional"}
    [(status, stats)] = sync_runs(state, SEVEN)
    assert status == "failed"
    assert any("type" in error for error in stats["errors"]), stats["errors"]


@pytest.fixture
def collecting(seed: Seed, devcloud: dict[str, Any], tmp_path: Path) -> Iterator[dict[str, str]]:
    """The collector's settings: the cloud's vhost, a queue of this test's own (deleted after)."""
    queue = f"tally-realcloud-{uuid.uuid4().hex[:8]}"
    yield {
        "TALLY_OSC_AMQP_URL": devcloud["amqp_url"],
        "TALLY_OSC_CLOUD": CLOUD,
        "TALLY_OSC_QUEUE_NAME": queue,
        "TALLY_OSC_FLUSH_INTERVAL_S": "0.2",
    }
    subprocess.run(["rabbitmqctl", "-q", "delete_queue", "-p", devcloud["vhost"], queue], check=False)


def test_the_collector_books_real_notifications_and_a_sync_books_what_was_lost(
    seed: Seed, devcloud: dict[str, Any], collecting: dict[str, str], tmp_path: Path
) -> None:
    state = tmp_path / "state"
    env = tally_env(seed, state, **collecting)
    admin_token = ""
    with running_daemon(env) as daemon:
        wait_until_ready(daemon.base_url)
        admin_token = secret(env, "token", "create", "--role", "admin")
        assert sync(daemon.base_url, CLOUD).status_code == 200  # what the cloud held before
        made = {
            ("instance", seed.tenant.server("collected-vm")),
            ("volume", volume := seed.tenant.volume("collected-volume")),
            ("floating_ip", seed.tenant.floating_ip()),
            ("image", seed.tenant.image("collected-image")),
            ("loadbalancer", seed.tenant.load_balancer("collected-lb")),
        }
        until(lambda: made <= set(booked(daemon.base_url, admin_token)), 90, "the collector booking")
        # cinder's notification names the volume type by its id; the collector books the name the API
        # shows, known from the types listing of the sync above.
        volume_row = booked(daemon.base_url, admin_token)[("volume", volume)]
        assert volume_row["size"]["type"] == seed.tenant.conn.block_storage.get_volume(volume).volume_type
        after = sync(daemon.base_url, CLOUD)
        assert after.status_code == 200, after.text
        assert after.json()["stats"]["created"] == 0  # the notifications had booked everything
    # Notifications lost: the daemon is down while resources are made, and its queue is purged.
    lost = {
        ("instance", seed.tenant.server("lost-vm")),
        ("volume", seed.tenant.volume("lost-volume")),
        ("floating_ip", seed.tenant.floating_ip()),
    }
    subprocess.run(
        ["rabbitmqctl", "-q", "purge_queue", "-p", devcloud["vhost"], collecting["TALLY_OSC_QUEUE_NAME"]],
        check=False, capture_output=True,
    )  # fmt: skip
    with running_daemon(env) as daemon:
        wait_until_ready(daemon.base_url)
        assert not lost & set(booked(daemon.base_url, admin_token))
        recovered = sync(daemon.base_url, CLOUD)
        assert recovered.status_code == 200, recovered.text
        assert recovered.json()["stats"]["created"] == len(lost)
        assert lost <= set(booked(daemon.base_url, admin_token))


def test_a_volume_of_a_type_made_after_the_start_is_named_from_its_first_second(
    seed: Seed, devcloud: dict[str, Any], collecting: dict[str, str], tmp_path: Path
) -> None:
    """Real cinder notifies the type's id. A type made after the daemon's scheduler listed the types:
    the collector books its volume under the id, and the sync that learns the name books no drift,
    while the record (the row, the lifecycle) names the type from the volume's first second."""
    env = tally_env(seed, tmp_path / "state", **collecting)
    type_name = f"tier-{uuid.uuid4().hex[:6]}"
    with running_daemon(env) as daemon:
        wait_until_ready(daemon.base_url)
        admin_token = secret(env, "token", "create", "--role", "admin")
        vtype = seed.tenant.admin.block_storage.create_type(name=type_name)
        conn = seed.tenant.conn
        volume = conn.block_storage.create_volume(name="typed-volume", size=1, volume_type=type_name)
        conn.block_storage.wait_for_status(volume, status="available", wait=120)
        key = ("volume", str(volume.id))
        until(lambda: key in booked(daemon.base_url, admin_token), 90, "the collector booking the volume")
        assert booked(daemon.base_url, admin_token)[key]["size"]["type"] == vtype.id

        answer = sync(daemon.base_url, CLOUD)
        assert answer.status_code == 200, answer.text
        assert answer.json()["stats"]["updated"] == 0, "the id was booked as a drift to the name"
        assert booked(daemon.base_url, admin_token)[key]["size"]["type"] == type_name
        lifecycle = httpx.get(
            f"{daemon.base_url}/api/v1/resources/{CLOUD}/volume/{volume.id}/lifecycle",
            headers={"Authorization": f"Bearer {admin_token}"},
            timeout=30,
        )
        assert lifecycle.status_code == 200, lifecycle.text
        intervals = lifecycle.json()["intervals"]
        assert intervals and {i["size"]["type"] for i in intervals} == {type_name}
        events = lifecycle.json()["events"]
        assert [e["event_type"] for e in events] == ["volume.create.end"]
        assert events[0]["payload"]["provider"]["size_as_reported"] == {"type": vtype.id}
