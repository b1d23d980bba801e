"""A real cloud without cinder (its catalog lists no block-storage, as a cloud that runs none): with
``include_cinder: false`` every run completes, so the bound moves and the deleted-servers listing is
read, and an instance delete whose notification was lost is dated at nova's ``terminated_at``; with
cinder expected, the run fails on the volume listing alone (an enumeration error, never a narrowed
listing). The catalog's block-storage endpoints are removed for the test and put back after it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from daemon_support import daemon_env, free_port, running_daemon, secret, wait_until_ready
from realcloud_support import CLOUD, INTERNAL, Operator, Tenant, sync

from tally.core import parse_instant

pytestmark = pytest.mark.realcloud

WITHOUT = "os-without-cinder"
EXPECTING = "os-expecting-cinder"


@pytest.fixture
def no_cinder(devcloud: dict[str, Any]) -> Iterator[Tenant]:
    tenant = Tenant(devcloud)
    identity = tenant.admin.identity
    removed = []
    for service in identity.services():
        if service.type in ("block-storage", "volumev3", "volume"):
            for endpoint in identity.endpoints(service_id=service.id):
                removed.append((service.id, endpoint.interface, endpoint.url, endpoint.region_id))
                identity.delete_endpoint(endpoint)
    assert removed, "the development cloud lists cinder"
    try:
        yield tenant
    finally:
        for service_id, interface, url, region in removed:
            identity.create_endpoint(service_id=service_id, interface=interface, url=url, region_id=region)


def _config(directory: Path) -> Path:
    entries = [
        {"cloud": name, "platform": "openstack", "adapter": "openstack", "sync_interval_s": 0,
         "adapter_config": {"os_cloud": f"{CLOUD}-password", "include_cinder": name != WITHOUT}}
        for name in (WITHOUT, EXPECTING)
    ]  # fmt: skip
    path = directory / "tally-clouds.yaml"
    path.write_text(yaml.safe_dump({"clouds": entries}))
    return path


def _terminated_at(tenant: Tenant, server_id: str) -> datetime:
    since = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    answer = tenant.admin.compute.get(
        f"/servers/detail?all_tenants=1&deleted=true&changes-since={since}",
        headers={"OpenStack-API-Version": "compute 2.47"},
    )
    [server] = [s for s in answer.json()["servers"] if s["id"] == server_id]
    return parse_instant(server["OS-SRV-USG:terminated_at"] + "Z")


def test_a_cloud_without_cinder_completes_its_runs_and_dates_a_lost_delete_at_termination(
    devcloud: dict[str, Any], no_cinder: Tenant, tmp_path: Path
) -> None:
    operator = Operator(tmp_path, devcloud)
    env = daemon_env(
        tmp_path / "state",
        free_port(),
        TALLY_REPORTING_INTERNAL_TOKEN=INTERNAL,
        TALLY_REPORTING_CLOUDS_CONFIG=str(_config(tmp_path)),
        TALLY_REPORTING_SYNC_SETTLE_S="0",
        OS_CLIENT_CONFIG_FILE=str(operator.clouds_file),
    )
    with running_daemon(env) as daemon:
        wait_until_ready(daemon.base_url)
        admin_token = secret(env, "token", "create", "--role", "admin")
        first = sync(daemon.base_url, WITHOUT)
        assert first.status_code == 200, first.text
        expecting = sync(daemon.base_url, EXPECTING)
        assert expecting.status_code == 500, expecting.text

        server = no_cinder.server("no-cinder-vm")
        assert sync(daemon.base_url, WITHOUT).json()["stats"]["created"] >= 1
        no_cinder.delete_server(server)  # no collector runs: the delete's notification is lost
        last = sync(daemon.base_url, WITHOUT)
        assert last.status_code == 200, last.text
        assert last.json()["stats"]["deleted"] >= 1
        events = httpx.get(
            f"{daemon.base_url}/api/v1/resources/{WITHOUT}/instance/{server}/events",
            headers={"Authorization": f"Bearer {admin_token}"},
            timeout=30,
        ).json()["items"]
    assert [e["event_type"] for e in events] == ["sync.create", "sync.delete"]
    assert parse_instant(events[-1]["timestamp"]) == _terminated_at(no_cinder, server)
