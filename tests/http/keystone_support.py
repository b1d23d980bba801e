"""Keystone tokens against the fake cloud's keystone: the tenants, the served fake, the app that checks them.

``keystone_api(store, tmp_path)`` serves a fake cloud of cloud ``os-dev`` over real HTTP with two
projects (alpha, beta) and the tenants of the authorization matrix, writes a clouds.yaml whose ``admin``
entry is Tally's service credential, and builds the Reporting API with keystone tokens of ``os-dev``
checked by that keystone. Events of both projects are ingested.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import yaml
from http_support import INGEST, Api, build_api, event

from tally.http.internals import KeystoneTokens, TallyPolicy
from tally.openstack import TokenChecker, resolve_cloud
from tally.simulation import serve_fake_cloud
from tally.simulator import WorldBuilder, create_fake_cloud_app
from tally.simulator.fakecloud import (
    ADMIN_PASSWORD,
    ADMIN_USER,
    FakeCloudState,
    admin_cloud_entry,
)
from tally.store import Store

CLOUD = "os-dev"
T0 = datetime(2026, 3, 1, tzinfo=UTC)
T1 = datetime(2026, 4, 1, tzinfo=UTC)


@dataclass
class KeystoneApi:
    api: Api
    fake: FakeCloudState
    url: str
    alpha: str
    beta: str
    clouds_yaml: Path

    async def token(self, user: str, password: str, scope: dict[str, Any]) -> str:
        body = {
            "auth": {
                "identity": {
                    "methods": ["password"],
                    "password": {"user": {"name": user, "domain": {"name": "Default"}, "password": password}},
                },
                "scope": scope,
            }
        }
        async with httpx.AsyncClient() as client:
            answer = await client.post(f"{self.url}/v3/auth/tokens", json=body)
        assert answer.status_code == 201, answer.text
        return answer.headers["X-Subject-Token"]

    async def tenant(self, name: str) -> str:
        """A token of the tenant ``name`` (see ``TENANTS``), scoped as the matrix scopes it."""
        if name == "admin":
            return await self.token(
                ADMIN_USER, ADMIN_PASSWORD, {"project": {"name": "service", "domain": {"name": "Default"}}}
            )
        if name == "domain_reader":
            return await self.token(name, f"{name}-password", {"domain": {"name": "Default"}})
        project = self.alpha if name != "beta_member" else self.beta
        return await self.token(name, f"{name}-password", {"project": {"id": project}})

    async def revoke(self, token: str) -> None:
        admin = await self.tenant("admin")
        async with httpx.AsyncClient() as client:
            answer = await client.delete(
                f"{self.url}/v3/auth/tokens", headers={"X-Auth-Token": admin, "X-Subject-Token": token}
            )
        assert answer.status_code == 204, answer.text

    async def get(self, path: str, token: str, **kw: Any) -> Any:
        return await self.api.client.get(path, headers={"X-Auth-Token": token}, **kw)


def checker(clouds_yaml: Path, entry: str = "admin", *, timeout_s: float = 5.0) -> TokenChecker:
    return TokenChecker(
        resolve_cloud(entry, env={"OS_CLIENT_CONFIG_FILE": str(clouds_yaml)}), timeout_s=timeout_s
    )


def events_of(alpha: str, beta: str) -> list[dict[str, Any]]:
    out = []
    for project, name in ((alpha, "a"), (beta, "b")):
        out.append(event(f"vm-{name}", project_id=project, timestamp="2026-03-02T00:00:00Z"))
        out.append(
            event(
                f"vol-{name}",
                project_id=project,
                resource_type="volume",
                size={"size_gb": 10, "type": "ssd"},
                event_type="volume.create.end",
                timestamp="2026-03-02T00:00:00Z",
            )
        )
    return out


def write_clouds_yaml(directory: Path, url: str) -> Path:
    """A clouds.yaml whose ``admin`` entry (the fake's admin account) is Tally's service credential."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "clouds.yaml"
    path.write_text(yaml.safe_dump({"clouds": {"admin": admin_cloud_entry(f"{url}/v3")}}))
    return path


@asynccontextmanager
async def keystone_api(
    store: Store,
    tmp_path: Path,
    *,
    cache_s: float = 60.0,
    policy: TallyPolicy | None = None,
    seed: bool = True,
) -> AsyncIterator[KeystoneApi]:
    b = WorldBuilder(cloud=CLOUD, period_from=T0, period_to=T1)
    alpha, beta = b.project("alpha"), b.project("beta")
    app = create_fake_cloud_app(b.build())
    state: FakeCloudState = app.config["FAKE_CLOUD"]
    accounts = state.accounts
    accounts.add_tenant("alpha_reader", alpha.id, "alpha", ("reader",))
    accounts.add_tenant("alpha_member", alpha.id, "alpha", ("member", "reader"))
    accounts.add_tenant("beta_member", beta.id, "beta", ("member", "reader"))
    accounts.add_tenant("alpha_observer", alpha.id, "alpha", ("observer",))
    accounts.add_tenant("domain_reader", alpha.id, "alpha", ("reader",), domain_roles=("reader",))
    async with anyio.create_task_group() as tg:
        port = await tg.start(serve_fake_cloud, app)
        url = f"http://127.0.0.1:{port}"
        clouds_yaml = write_clouds_yaml(tmp_path, url)
        tokens = KeystoneTokens({CLOUD: checker(clouds_yaml)}, policy or TallyPolicy(), cache_s=cache_s)
        api = await build_api(store, keystone=tokens, seed=seed)
        if seed:
            answer = await api.post("/api/v1/events", INGEST, json=events_of(alpha.id, beta.id))
            assert answer.status_code == 200, await answer.get_data()
            assert (await answer.get_json())["rejected"] == [], await answer.get_data()
        yield KeystoneApi(api, state, url, alpha.id, beta.id, clouds_yaml)
        tg.cancel_scope.cancel()
