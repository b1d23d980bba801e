"""Keystone tokens on the Reporting API against the real keystone of the development cloud.

Two projects of their own (alpha, beta) in the Default domain, and the tenants of the authorization
matrix made with the real identity API: a reader and a member of alpha, a member of beta, a reader of
the Default domain, and the cloud's admin. Tally checks their tokens with the devcloud-admin entry
(its service credential) through keystoneauth1, exactly as a deployment would. An expired token is a
token of an application credential that expires seconds later (keystone caps a token at its
credential's expires_at); a revoked one is revoked with DELETE /v3/auth/tokens.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import yaml
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

import openstack
from tally.config import Settings
from tally.http import ReportingServices, create_reporting_app, serve_quart
from tally.http.internals import KeystoneTokens, TallyPolicy
from tally.ingest import IngestPipeline
from tally.openstack import TokenChecker, resolve_cloud
from tally.store import hash_secret, open_store

pytestmark = [pytest.mark.realcloud, pytest.mark.anyio]
CLOUD = "os-dev-keystone"
WINDOW = "from=2026-03-01T00:00:00Z&to=2026-04-01T00:00:00Z"
LISTINGS = ("/api/v1/events", "/api/v1/resources", f"/api/v1/usage?{WINDOW}")


@dataclass
class Tenants:
    auth_url: str
    alpha: str
    beta: str
    passwords: dict[str, tuple[str, str]]  # name -> (user id, password)
    admin_token: str

    def token(self, name: str, **scope: str) -> str:
        user_id, password = self.passwords[name]
        auth = v3.Password(auth_url=self.auth_url, user_id=user_id, password=password, **scope)
        return str(ks_session.Session(auth=auth).get_token())

    def scoped(self, name: str) -> str:
        if name == "domain_reader":
            return self.token(name, domain_id="default")
        return self.token(name, project_id=self.beta if name == "beta_member" else self.alpha)

    def revoke(self, token: str) -> None:
        answer = httpx.delete(
            f"{self.auth_url}/auth/tokens",
            headers={"X-Auth-Token": self.admin_token, "X-Subject-Token": token},
        )
        assert answer.status_code == 204, answer.text

    def short_lived(self, name: str, seconds: int) -> tuple[str, datetime]:
        """A token of ``name`` that keystone lets expire ``seconds`` from now (an app credential's)."""
        user_id, _ = self.passwords[name]
        own = self.scoped(name)
        expires = (datetime.now(UTC) + timedelta(seconds=seconds)).replace(microsecond=0)
        made = httpx.post(
            f"{self.auth_url}/users/{user_id}/application_credentials",
            headers={"X-Auth-Token": own},
            json={
                "application_credential": {
                    "name": f"short-{uuid.uuid4().hex[:6]}",
                    "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%S"),
                }
            },
        )
        assert made.status_code == 201, made.text
        cred = made.json()["application_credential"]
        auth = v3.ApplicationCredential(
            auth_url=self.auth_url,
            application_credential_id=cred["id"],
            application_credential_secret=cred["secret"],
        )
        return str(ks_session.Session(auth=auth).get_token()), expires


@pytest.fixture(scope="module")
def tenants(devcloud: dict[str, Any]) -> Any:
    conn = openstack.connect(
        auth_url=devcloud["auth_url"], region_name=devcloud["region_name"], **devcloud["admin"]
    )
    suffix = uuid.uuid4().hex[:8]
    roles = {r.name: r.id for r in conn.identity.roles()}
    made_projects = [
        conn.identity.create_project(name=f"ks-{n}-{suffix}", domain_id="default") for n in ("a", "b")
    ]
    alpha, beta = (p.id for p in made_projects)
    plan = {
        "alpha_reader": ("project", alpha, "reader"),
        "alpha_member": ("project", alpha, "member"),
        "beta_member": ("project", beta, "member"),
        "domain_reader": ("domain", "default", "reader"),
    }
    users, passwords = [], {}
    try:
        for name, (kind, target, role) in plan.items():
            password = uuid.uuid4().hex
            user = conn.identity.create_user(
                name=f"ks-{name}-{suffix}", password=password, domain_id="default"
            )
            users.append(user)
            passwords[name] = (user.id, password)
            if kind == "project":
                conn.identity.assign_project_role_to_user(target, user, roles[role])
            else:
                conn.identity.assign_domain_role_to_user("default", user, roles[role])
        yield Tenants(devcloud["auth_url"], alpha, beta, passwords, conn.auth_token)
    finally:
        for user in users:
            conn.identity.delete_user(user, ignore_missing=True)
        for project in made_projects:
            conn.identity.delete_project(project, ignore_missing=True)


def events(alpha: str, beta: str) -> list[dict[str, Any]]:
    return [
        {
            "event_id": f"{name}-create",
            "timestamp": "2026-03-02T00:00:00Z",
            "event_type": "compute.instance.create.end",
            "platform": "openstack",
            "cloud": CLOUD,
            "resource_type": "instance",
            "resource_id": f"vm-{name}",
            "project_id": project,
            "payload": {
                "state": "active",
                "size": {"vcpus": 1, "ram_gb": 1, "disk_gb": 1, "flavor": "m1.tiny"},
            },
        }
        for name, project in (("a", alpha), ("b", beta))
    ]


@asynccontextmanager
async def tally(
    devcloud: dict[str, Any], tenants: Tenants, tmp_path: Path, *, cache_s: float = 60, db: str = "tally"
) -> AsyncIterator[Any]:
    env = {"OS_CLIENT_CONFIG_FILE": devcloud["clouds_yaml"]}
    checker = TokenChecker(resolve_cloud(devcloud["cloud"], env=env), timeout_s=10)
    async with open_store(f"sqlite:///{tmp_path / db}.sqlite3") as store:
        await store.migrate_up()
        await store.create_ingest_credential(
            platform="openstack", cloud=CLOUD, token_hash=hash_secret("ingest")
        )
        services = ReportingServices(
            store=store,
            pipeline=IngestPipeline(store, require_size_schema=False),
            settings=Settings(),
            keystone=KeystoneTokens({CLOUD: checker}, TallyPolicy(), cache_s=cache_s),
        )
        client = create_reporting_app(services).test_client()
        posted = await client.post(
            "/api/v1/events",
            headers={"Authorization": "Bearer ingest"},
            json=events(tenants.alpha, tenants.beta),
        )
        assert posted.status_code == 200 and (await posted.get_json())["rejected"] == []
        yield client


async def projects_seen(client: Any, path: str, token: str) -> set[str]:
    answer = await client.get(path, headers={"X-Auth-Token": token})
    assert answer.status_code == 200, await answer.get_data()
    return {item["project_id"] for item in (await answer.get_json())["items"]}


async def test_the_matrix_against_the_real_keystone(
    devcloud: dict[str, Any], tenants: Tenants, tmp_path: Path
) -> None:
    async with tally(devcloud, tenants, tmp_path) as client:
        for name, own in (
            ("alpha_reader", tenants.alpha),
            ("alpha_member", tenants.alpha),
            ("beta_member", tenants.beta),
        ):
            token = tenants.scoped(name)
            other = tenants.beta if own == tenants.alpha else tenants.alpha
            for path in LISTINGS:
                assert await projects_seen(client, path, token) == {own}, (name, path)
                sep = "&" if "?" in path else "?"
                refused = await client.get(f"{path}{sep}project_id={other}", headers={"X-Auth-Token": token})
                missing = await client.get(f"{path}{sep}project_id=nope", headers={"X-Auth-Token": token})
                assert refused.status_code == missing.status_code == 403
                assert await refused.get_json() == await missing.get_json()
            lifecycle = await client.get(
                f"/api/v1/resources/{CLOUD}/instance/vm-{'b' if own == tenants.alpha else 'a'}/lifecycle",
                headers={"X-Auth-Token": token},
            )
            assert lifecycle.status_code == 404
        domain = tenants.scoped("domain_reader")
        for project in (tenants.alpha, tenants.beta):
            assert await projects_seen(client, f"/api/v1/events?project_id={project}", domain) == {project}
        grouped = await projects_seen(client, f"/api/v1/usage?{WINDOW}&group_by=project_id", domain)
        assert grouped == {tenants.alpha, tenants.beta}
        for path in LISTINGS:
            assert await projects_seen(client, path, tenants.admin_token) == {tenants.alpha, tenants.beta}


async def test_revoked_and_expired_tokens_against_the_real_keystone(
    devcloud: dict[str, Any], tenants: Tenants, tmp_path: Path
) -> None:
    async with tally(devcloud, tenants, tmp_path, cache_s=0) as client:
        token = tenants.scoped("alpha_reader")
        assert (await client.get("/api/v1/events", headers={"X-Auth-Token": token})).status_code == 200
        tenants.revoke(token)
        revoked = await client.get("/api/v1/events", headers={"X-Auth-Token": token})
        assert revoked.status_code == 401
        assert revoked.headers["Content-Type"] == "application/problem+json"
        short, expires = tenants.short_lived("alpha_reader", 8)
        assert (await client.get("/api/v1/events", headers={"X-Auth-Token": short})).status_code == 200
        await anyio.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 1.5)
        assert (await client.get("/api/v1/events", headers={"X-Auth-Token": short})).status_code == 401
    async with tally(devcloud, tenants, tmp_path, cache_s=300, db="cached") as client:
        short, expires = tenants.short_lived("alpha_member", 8)
        assert (await client.get("/api/v1/events", headers={"X-Auth-Token": short})).status_code == 200
        await anyio.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 1.5)
        cached = await client.get("/api/v1/events", headers={"X-Auth-Token": short})
        assert cached.status_code == 401 and "expired" in (await cached.get_json())["detail"]
        started = time.monotonic()
        garbage = await client.get("/api/v1/events", headers={"X-Auth-Token": "gAAAAAnot-a-token"})
        assert garbage.status_code == 401 and time.monotonic() - started < 10


def guide_block(which: str) -> str:
    text = (Path(__file__).resolve().parents[2] / "docs" / "reporting-api.md").read_text()
    found = re.search(rf"<!-- keystone-guide: {which} -->\n```sh\n(.*?)```", text, re.S)
    assert found is not None, which
    return found.group(1)


def tenant_clouds_yaml(directory: Path, tenants: Tenants, name: str) -> Path:
    user_id, password = tenants.passwords[name]
    entry = {
        "auth_url": tenants.auth_url,
        "user_id": user_id,
        "password": password,
        "project_id": tenants.alpha,
    }
    path = directory / "tenant-clouds.yaml"
    path.write_text(yaml.safe_dump({"clouds": {"tenant": {"auth": entry, "region_name": "RegionOne"}}}))
    return path


async def test_the_guide_registers_tally_and_a_tenant_reads_with_its_token(
    devcloud: dict[str, Any], tenants: Tenants, tmp_path: Path
) -> None:
    tenant_yaml = tenant_clouds_yaml(tmp_path, tenants, "alpha_reader")
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    admin_env = {
        **os.environ,
        "PATH": path,
        "OS_CLIENT_CONFIG_FILE": devcloud["clouds_yaml"],
        "OS_CLOUD": devcloud["cloud"],
    }
    async with tally(devcloud, tenants, tmp_path) as client, anyio.create_task_group() as tg:
        port = await tg.start(serve_quart, client.app, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{port}"
        try:
            await anyio.run_process(
                ["bash", "-euo", "pipefail", "-c", guide_block("operator")],
                env={**admin_env, "TALLY_URL": url},
            )
            tenant_env = {
                **os.environ,
                "PATH": path,
                "OS_CLIENT_CONFIG_FILE": str(tenant_yaml),
                "OS_CLOUD": "tenant",
            }
            done = await anyio.run_process(
                ["bash", "-euo", "pipefail", "-c", guide_block("tenant")], env=tenant_env
            )
            answer = json.loads(done.stdout)
            # Alpha's one instance: beta's would make it two creates.
            assert [(i["resource_type"], i["creates"]) for i in answer["items"]] == [("instance", 1)]
        finally:
            await anyio.run_process(["openstack", "service", "delete", "tally"], env=admin_env, check=False)
            tg.cancel_scope.cancel()
