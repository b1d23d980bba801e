"""Helpers of the fake cloud's tests: a small world, and the app served over real HTTP.

A module of its own (not conftest) so that test modules import it by a name no other test area uses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import httpx

from tally.simulation import serve_fake_cloud
from tally.simulator import VirtualClock, World, WorldBuilder, create_fake_cloud_app
from tally.simulator.fakecloud import (
    ADMIN_PASSWORD,
    ADMIN_USER,
    MEMBER_PASSWORD,
    MEMBER_USER,
    ApiFaults,
    FakeCloudState,
)

T0 = datetime(2026, 7, 1, tzinfo=UTC)
T1 = datetime(2026, 8, 1, tzinfo=UTC)
H = timedelta(hours=1)


def small_world() -> World:
    """Two projects; every type; a deleted server, a building one, transitional volume and balancer."""
    b = WorldBuilder(cloud="os-sim", period_from=T0, period_to=T1)
    alpha = b.project("alpha")
    beta = b.project("beta")
    small = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    large = b.flavor("m1.large", vcpus=4, ram_mb=8192, disk_gb=40, ephemeral_gb=40)
    ssd = b.volume_type("ssd")
    b.volume_type("vault", is_public=False)
    b.instance(alpha, small, created_at=T0 + H, building=timedelta(seconds=40), name="alpha-web")
    b.instance(beta, large, created_at=T0 + 2 * H, name="beta-db").change(T0 + 5 * H, state="shutoff")
    gone = b.instance(alpha, small, created_at=T0 + 3 * H, name="alpha-gone")
    gone.transition(T0 + 100 * H, T0 + 100 * H + timedelta(seconds=5), "deleting")
    gone.terminate(T0 + 100 * H + timedelta(seconds=5))
    b.instance(beta, small, created_at=T1 - timedelta(seconds=30), building=timedelta(minutes=5), name="late")
    b.volume(alpha, ssd, size_gb=50, created_at=T0 + H, name="alpha-data")
    b.volume(beta, ssd, size_gb=20, created_at=T0 + H).transition(T1 - H, T1 + H, "extending", size_gb=40)
    b.floating_ip(alpha, address="203.0.113.7", created_at=T0 + H)
    b.floating_ip(beta, address="203.0.113.9", created_at=T0 + H)
    b.image(alpha, size_bytes=2**30, created_at=T0 + H, name="alpha-img")
    b.image(beta, size_bytes=2**29, created_at=T0 + H, state="deactivated", visibility="public")
    b.image(beta, size_bytes=2**28, created_at=T0 + H, visibility="community")
    b.image(beta, size_bytes=None, created_at=T1 - H, name="beta-upload").change(T1 - H, transition="queued")
    b.loadbalancer(alpha, created_at=T0 + H, listeners=2, pools=1)
    b.loadbalancer(beta, created_at=T0 + H).change(T1 - H, transition="PENDING_DELETE")
    dead = b.loadbalancer(beta, created_at=T0 + H)
    dead.terminate(T0 + 2 * H)
    return b.build()


def crowd(n: int) -> World:
    """``n`` resources of each type in one project, a tenth of the instances deleted."""
    b = WorldBuilder(cloud="os-sim", period_from=T0, period_to=T1)
    p = b.project("crowd")
    f = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    vt = b.volume_type("ssd")
    for i in range(n):
        at = T0 + timedelta(minutes=i % 1000)
        vm = b.instance(p, f, created_at=at)
        if i % 10 == 0:
            vm.terminate(at + timedelta(days=3))
        b.volume(p, vt, size_gb=10, created_at=at)
        b.floating_ip(p, address=f"10.{i // 65536}.{i // 256 % 256}.{i % 256}", created_at=at)
        b.image(p, size_bytes=1024, created_at=at)
        b.loadbalancer(p, created_at=at)
    return b.build()


@dataclass
class Fake:
    """The served fake: its base URL, its state (clock, faults, accounts) and an HTTP client."""

    url: str
    state: FakeCloudState
    client: httpx.AsyncClient

    async def token(self, kind: str = "admin") -> str:
        """A token of the admin (password), the member, or an application credential by name."""
        if kind == "admin":
            body = password_auth(ADMIN_USER, ADMIN_PASSWORD, "service")
        elif kind == "member":
            member = self.state.accounts.member
            body = password_auth(MEMBER_USER, MEMBER_PASSWORD, member.project_name)
        else:
            cred = self.state.accounts.credential(kind)
            body = {
                "auth": {
                    "identity": {
                        "methods": ["application_credential"],
                        "application_credential": {"id": cred.id, "secret": cred.secret},
                    }
                }
            }
        answer = await self.client.post(f"{self.url}/v3/auth/tokens", json=body)
        assert answer.status_code == 201, answer.text
        return answer.headers["X-Subject-Token"]

    async def get(self, path: str, token: str | None = None, **kw: Any) -> httpx.Response:
        headers = dict(kw.pop("headers", {}))
        if token:
            headers["X-Auth-Token"] = token
        return await self.client.get(f"{self.url}{path}", headers=headers, **kw)


def password_auth(user: str, password: str, project: str) -> dict[str, Any]:
    return {
        "auth": {
            "identity": {
                "methods": ["password"],
                "password": {"user": {"name": user, "domain": {"name": "Default"}, "password": password}},
            },
            "scope": {"project": {"name": project, "domain": {"name": "Default"}}},
        }
    }


async def serve(world: World, clock: VirtualClock | None = None, faults: ApiFaults | None = None) -> Any:
    """An async context manager serving ``world`` on a free port; yields a :class:`Fake`."""
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def running() -> AsyncIterator[Fake]:
        app = create_fake_cloud_app(world, clock, faults)
        async with anyio.create_task_group() as tg:
            port = await tg.start(serve_fake_cloud, app)
            async with httpx.AsyncClient(timeout=30) as client:
                yield Fake(f"http://127.0.0.1:{port}", app.config["FAKE_CLOUD"], client)
            tg.cancel_scope.cancel()

    return running()
