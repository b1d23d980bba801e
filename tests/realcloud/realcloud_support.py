"""What the seed 001 rehearsal drives against the real cloud: the operator's files and CLI, a tenant
whose resources the account lists, and ``tally run`` with the clouds config of the seed.

``Operator`` is the operator's machine of the seed: a clouds.yaml and a secure.yaml in one directory,
the ``openstack`` CLI reading them, and the entries the steps add (the password entry, the
credential's entry). ``Tenant`` makes resources in a project of its own through openstacksdk, so a
listing "across every project" has more than the account's own project to show.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

import openstack
from tally.simulator.fakecloud import READ_ONLY_RULES

OPENSTACK = shutil.which("openstack", path=str(Path(sys.executable).parent)) or shutil.which("openstack")
INTERNAL = "internal-secret-for-the-real-cloud"
CLOUD = "os-prod-eu1"
SEVEN = "os-prod-eu1-seven"  # the credential of the seed's warning: the types rule left out

# Seed 001, "Restrict the account to read requests", step 2: the eight rules, as the seed writes them
# (the fake's keystone holds the same list; here the real services enforce it).
RULES: list[dict[str, str]] = [dict(rule) for rule in READ_ONLY_RULES]


def openstack_cli() -> str:
    if OPENSTACK is None:
        pytest.fail("python-openstackclient is not installed (the test extra)")
    return OPENSTACK


class Operator:
    """The operator's clouds.yaml, secure.yaml and ``openstack`` CLI (seed 001's machine)."""

    def __init__(self, directory: Path, devcloud: dict[str, Any]) -> None:
        self.directory = directory
        self.clouds_file = directory / "clouds.yaml"
        self.secure_file = directory / "secure.yaml"
        self.auth_url: str = devcloud["auth_url"]
        admin = devcloud["admin"]
        self.clouds: dict[str, Any] = {
            f"{CLOUD}-password": {
                "auth_type": "password",
                "auth": {"auth_url": self.auth_url, **admin},
                "region_name": devcloud["region_name"],
                "interface": "public",
            }
        }
        self.secure: dict[str, Any] = {}
        self.write()

    def write(self) -> None:
        self.clouds_file.write_text(yaml.safe_dump({"clouds": self.clouds}))
        self.secure_file.write_text(yaml.safe_dump({"clouds": self.secure}))

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "OS_CLIENT_CONFIG_FILE": str(self.clouds_file),
            "OS_CLIENT_SECURE_FILE": str(self.secure_file),
        }
        return subprocess.run([openstack_cli(), *args], env=env, capture_output=True, text=True, timeout=120)

    def __call__(self, *args: str) -> str:
        done = self.run(*args)
        assert done.returncode == 0, (args, done.stderr)
        return done.stdout

    def create_credential(self, name: str, rules: list[dict[str, str]]) -> dict[str, str]:
        """Step 2: the credential, created as the account itself; the CLI's printed keys and values."""
        printed = self(
            "--os-cloud", f"{CLOUD}-password", "application", "credential", "create", "--role", "admin",
            "--access-rules", json.dumps(rules), "-f", "yaml", "-c", "id", "-c", "secret", name,
        )  # fmt: skip
        shown: dict[str, str] = yaml.safe_load(printed)
        return shown

    def add_credential_entry(self, entry: str, credential_id: str, secret: str) -> None:
        """Step 3: the entry names the credential alone; its secret goes to secure.yaml."""
        self.clouds[entry] = {
            "auth_type": "v3applicationcredential",
            "auth": {"auth_url": self.auth_url, "application_credential_id": credential_id},
            "region_name": "RegionOne",
            "interface": "public",
        }
        self.secure[entry] = {"auth": {"application_credential_secret": secret}}
        self.write()


class Tenant:
    """A project of its own with a member user, making resources through openstacksdk."""

    def __init__(self, devcloud: dict[str, Any]) -> None:
        admin = self.admin = openstack.connect(
            auth_url=devcloud["auth_url"], region_name=devcloud["region_name"], **devcloud["admin"]
        )
        name = f"tenant-{uuid.uuid4().hex[:8]}"
        self.project = admin.identity.create_project(name=name, domain_id="default")
        password = uuid.uuid4().hex
        user = admin.identity.create_user(name=name, password=password, domain_id="default")
        # octavia's policy asks for a role of its own (load-balancer_member) besides keystone's member.
        lb_member = admin.identity.find_role("load-balancer_member") or admin.identity.create_role(
            name="load-balancer_member"
        )
        for role in (admin.identity.find_role("member"), lb_member):
            admin.identity.assign_project_role_to_user(self.project, user, role)
        self.conn = openstack.connect(
            auth_url=devcloud["auth_url"], region_name=devcloud["region_name"], username=name,
            password=password, project_name=name, user_domain_name="Default", project_domain_name="Default",
        )  # fmt: skip
        self.resources = devcloud["resources"]

    def server(self, name: str) -> str:
        server = self.conn.compute.create_server(
            name=name,
            flavor_id=self.resources["flavor_id"],
            image_id=self.resources["image_id"],
            networks="none",
        )
        self.conn.compute.wait_for_server(server, status="ACTIVE", wait=120)
        return str(server.id)

    def delete_server(self, server_id: str) -> None:
        self.conn.compute.delete_server(server_id)
        self.conn.compute.wait_for_delete(self.conn.compute.get_server(server_id), wait=120)

    def volume(self, name: str) -> str:
        volume = self.conn.block_storage.create_volume(name=name, size=1)
        self.conn.block_storage.wait_for_status(volume, status="available", wait=120)
        return str(volume.id)

    def floating_ip(self) -> str:
        return str(self.conn.network.create_ip(floating_network_id=self.resources["network_id"]).id)

    def image(self, name: str) -> str:
        image = self.conn.image.create_image(
            name=name,
            data=b"tenant image\n",
            disk_format="raw",
            container_format="bare",
            allow_duplicates=True,
        )
        return str(image.id)

    def load_balancer(self, name: str) -> str:
        """A load balancer (octavia's no-op drivers bring it to ACTIVE)."""
        lb = self.conn.load_balancer.create_load_balancer(
            name=name, vip_subnet_id=self.resources["subnet_id"]
        )
        until(lambda: self.conn.load_balancer.get_load_balancer(lb.id).provisioning_status == "ACTIVE", 120)
        return str(lb.id)


def until(check: Callable[[], bool], timeout_s: float, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not hold within {timeout_s:g}s")
        time.sleep(0.5)


def clouds_config(directory: Path) -> Path:
    """Seed 001, "Name the cloud": the entry of the credential with eight rules, and one with seven."""
    config = directory / "tally-clouds.yaml"
    entries = [
        {"cloud": name, "platform": "openstack", "adapter": "openstack", "sync_interval_s": 0,
         "adapter_config": {"os_cloud": name, "include_octavia": True}}
        for name in (CLOUD, SEVEN)
    ]  # fmt: skip
    config.write_text(yaml.safe_dump({"clouds": entries}))
    return config


def sync(base_url: str, cloud: str, timeout_s: float = 120) -> httpx.Response:
    """Seed 001, "Trigger a sync": POST /internal/sync/{cloud} with the internal token."""
    return httpx.post(
        f"{base_url}/internal/sync/{cloud}",
        headers={"Authorization": f"Bearer {INTERNAL}"},
        timeout=timeout_s,
    )


def sync_runs(state: Path, cloud: str) -> list[tuple[str, dict[str, Any]]]:
    """Seed 001, "Check the result" step 3: (status, stats) of the cloud's runs, newest first."""
    with sqlite3.connect(state / "tally.sqlite3") as db:
        rows = db.execute(
            "SELECT status, stats FROM sync_runs WHERE cloud = ? ORDER BY started_at DESC", (cloud,)
        ).fetchall()
    return [(status, json.loads(stats)) for status, stats in rows]


def booked(base_url: str, admin_token: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The projection rows of the cloud, by (resource_type, resource_id)."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    cursor: str | None = None
    while True:
        params = {"cloud": CLOUD, "status": "all", **({"cursor": cursor} if cursor else {})}
        answer = httpx.get(
            f"{base_url}/api/v1/resources",
            params=params,
            headers={"Authorization": f"Bearer {admin_token}"},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        page = answer.json()
        rows |= {(row["resource_type"], row["resource_id"]): row for row in page["items"]}
        cursor = page.get("next_cursor")
        if not cursor:
            return rows
