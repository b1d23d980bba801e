"""The fake cloud against the real services: the same resources on both, the same requests a sync
sends (and the errors it may meet), and the answers compared shape by shape: each member present or
absent, its JSON type, null against a value, the paging links, the microversion headers and the
error bodies. The real services are the reference: a difference is fixed in the fake, or it is in
``KNOWN`` with its reason (and docs/simulator-fake-cloud.md says the same); a difference that is not
listed, and a listed one that no longer shows, both fail, so the list stays the truth.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import httpx
import pytest
from realcloud_support import Tenant
from shapes import differences, header_shape, shape

import openstack
from tally.openstack._listing import under
from tally.simulation import serve_fake_cloud
from tally.simulator.clock import VirtualClock
from tally.simulator.fakecloud import admin_cloud_entry, create_fake_cloud_app
from tally.simulator.world import WorldBuilder

pytestmark = [pytest.mark.realcloud, pytest.mark.anyio]

T0 = datetime(2026, 7, 1, tzinfo=UTC)
NOVA_247 = {"OpenStack-API-Version": "compute 2.47", "X-OpenStack-Nova-API-Version": "2.47"}
HEADERS = ("Content-Type", "OpenStack-API-Version", "X-OpenStack-Nova-API-Version", "Vary")


@dataclass(frozen=True)
class Ask:
    """One request of the comparison: service type, path under its endpoint, query, headers."""

    name: str
    service: str
    path: str
    versioned: str = ""
    params: tuple[tuple[str, str], ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    token: bool = True
    # (list member, name): compare only the elements of that name, for a listing of the whole cloud
    # whose other elements are other tests' data.
    only: tuple[str, str] | None = None


SINCE = "{since}"
ALL = (("all_tenants", "1"),)
N247 = tuple(NOVA_247.items())
NO_SUCH = "00000000-0000-4000-8000-000000000000"
ASKS = (
    Ask("compute version document", "compute", "/"),
    Ask("servers, 2.47", "compute", "/servers/detail", params=ALL, headers=N247),
    Ask("servers, 2.1", "compute", "/servers/detail", params=ALL),
    Ask("servers, a page of one", "compute", "/servers/detail", params=(*ALL, ("limit", "1")), headers=N247),
    Ask(
        "deleted servers",
        "compute",
        "/servers/detail",
        params=(*ALL, ("deleted", "true"), ("changes-since", SINCE)),
        headers=N247,
    ),
    Ask("flavors", "compute", "/flavors/detail", params=(("is_public", "None"),)),
    Ask("servers, an unknown marker", "compute", "/servers/detail", params=(*ALL, ("marker", NO_SUCH))),
    Ask("servers, a bad changes-since", "compute", "/servers/detail", params=(("changes-since", "x"),)),
    Ask(
        "servers, an unsupported microversion",
        "compute",
        "/servers/detail",
        headers=(("OpenStack-API-Version", "compute 9.99"),),
    ),
    Ask("servers, no token", "compute", "/servers/detail", token=False),
    Ask("volumes", "block-storage", "/volumes/detail", params=ALL),
    Ask("volumes, a page of one", "block-storage", "/volumes/detail", params=(*ALL, ("limit", "1"))),
    Ask(
        "volume types",
        "block-storage",
        "/types",
        params=(("is_public", "None"),),
        only=("volume_types", "cmp-type"),
    ),
    Ask("floating IPs", "network", "/floatingips", "/v2.0"),
    Ask("images", "image", "/images", "/v2", params=(("visibility", "all"),)),
    Ask("hidden images", "image", "/images", "/v2", params=(("visibility", "all"), ("os_hidden", "true"))),
    Ask("load balancers", "load-balancer", "/lbaas/loadbalancers", "/v2"),
)

# Where the fake still differs from the real services, and why it may: each is a fact of the data or
# of the deployment, not of the API (docs/simulator-fake-cloud.md, "Where the fake differs from the real
# services"). Each line is exactly what ``differences`` reports for one request, so the list is checked
# both ways.
_SERVER_DATA = {
    "body.servers[].image: real object, fake string": (
        "the fake's world records no boot source: its servers show nova's boot-from-volume form (an empty "
        "string), the development cloud's boot from an image ({id, links})"
    ),
    "body.servers[].security_groups: real absent, fake array": (
        "the development cloud's servers have no port (no mechanism driver), and nova leaves the member "
        "out of a server without ports; the fake's servers have the default group, as most clouds' do"
    ),
}
KNOWN: dict[str, dict[str, str]] = {
    "servers, 2.47": _SERVER_DATA,
    "servers, 2.1": _SERVER_DATA,
    "servers, a page of one": _SERVER_DATA,
    "deleted servers": _SERVER_DATA,
    "floating IPs": {
        f"body.floatingips[].{member}: real absent, fake {kind}": (
            "the development cloud's neutron loads no dns, port-forwarding or qos extension; clouds that "
            "do show these members, and the fake shows them"
        )
        for member, kind in (
            ("dns_domain", "string"),
            ("dns_name", "string"),
            ("port_forwardings", "array"),
            ("qos_network_policy_id", "null"),
            ("qos_policy_id", "null"),
        )
    },
    "images": {
        **{
            f"body.images[].owner_specified.openstack.{member}: real string, fake absent": (
                "set by openstacksdk's upload, not by glance: data of the image, not of the API"
            )
            for member in ("md5", "object", "sha256")
        },
        "body.images[].stores: real string, fake absent": (
            "shown by a glance with several stores (enabled_backends), as the development cloud's is; the "
            "fake is a glance with one"
        ),
    },
}


@dataclass
class Side:
    token: str
    endpoints: dict[str, str]
    since: str

    def url(self, ask: Ask) -> str:
        base = self.endpoints[ask.service]
        return under(base, ask.path, ask.versioned) if ask.versioned else base.rstrip("/") + ask.path


def _side(conn: openstack.connection.Connection, since: datetime) -> Side:
    services = ("compute", "block-storage", "network", "image", "load-balancer")
    endpoints = {s: conn.session.get_endpoint(service_type=s, interface="public") for s in services}
    return Side(str(conn.session.get_token()), endpoints, since.strftime("%Y-%m-%dT%H:%M:%SZ"))


async def _answer(client: httpx.AsyncClient, side: Side, ask: Ask) -> dict[str, Any]:
    params = [(k, side.since if v == SINCE else v) for k, v in ask.params]
    headers = dict(ask.headers) | ({"X-Auth-Token": side.token} if ask.token else {})
    response = await client.get(side.url(ask), params=params, headers=headers)
    try:
        body: Any = response.json()
    except ValueError:
        body = {"(not JSON)": response.headers.get("content-type", "")}
    if ask.only is not None and isinstance(body, dict):
        member, name = ask.only
        body[member] = [e for e in body.get(member) or [] if e.get("name") == name]
    return {
        "status": response.status_code,
        "headers": header_shape(response.headers.items(), HEADERS),
        "body": shape(body),
    }


def _fake_world(since: datetime) -> Any:
    """The real tenant's resources, built in the fake: a live and a deleted server, a volume, a floating
    IP, an image and a load balancer."""
    b = WorldBuilder(cloud="os-compare", period_from=T0, period_to=T0 + timedelta(days=31))
    p = b.project("tenant")
    tiny = b.flavor("m1.tiny", vcpus=1, ram_mb=512, disk_gb=1)
    b.instance(p, tiny, created_at=T0 + timedelta(hours=1), building=timedelta(seconds=2))
    b.instance(p, tiny, created_at=T0 + timedelta(hours=1), building=timedelta(seconds=2)).terminate(
        T0 + timedelta(hours=2)
    )
    b.volume(p, b.volume_type("cmp-type"), size_gb=1, created_at=T0 + timedelta(hours=1))
    b.floating_ip(p, address="203.0.113.9", created_at=T0 + timedelta(hours=1))
    b.image(p, size_bytes=13, created_at=T0 + timedelta(hours=1))
    b.loadbalancer(p, created_at=T0 + timedelta(hours=1))
    return b.build()


@pytest.fixture(scope="module")
def real_tenant(devcloud: dict[str, Any]) -> Tenant:
    tenant = Tenant(devcloud)
    tenant.server("cmp-live")
    tenant.delete_server(tenant.server("cmp-gone"))
    if tenant.admin.block_storage.find_type("cmp-type") is None:
        tenant.admin.block_storage.create_type(name="cmp-type")
    volume = tenant.conn.block_storage.create_volume(name="cmp-vol", size=1, volume_type="cmp-type")
    tenant.conn.block_storage.wait_for_status(volume, status="available", wait=120)
    tenant.floating_ip()
    tenant.image("cmp-image")
    tenant.load_balancer("cmp-lb")
    return tenant


@pytest.fixture(scope="module")
async def answers(devcloud: dict[str, Any], real_tenant: Tenant) -> AsyncIterator[dict[str, Any]]:
    real = _side(real_tenant.admin, datetime.now(UTC) - timedelta(hours=1))
    world = _fake_world(T0)
    app = create_fake_cloud_app(world, VirtualClock(T0 + timedelta(days=3), 0.0))
    async with anyio.create_task_group() as tg:
        port = await tg.start(serve_fake_cloud, app, "127.0.0.1", 0)
        entry = admin_cloud_entry(f"http://127.0.0.1:{port}/v3")
        conn = await anyio.to_thread.run_sync(
            lambda: openstack.connect(auth_type="password", auth=entry["auth"], region_name="RegionOne")
        )
        fake = await anyio.to_thread.run_sync(_side, conn, T0 + timedelta(hours=1))
        out: dict[str, Any] = {}
        async with httpx.AsyncClient(timeout=60) as client:
            for ask in ASKS:
                out[ask.name] = {
                    "real": await _answer(client, real, ask),
                    "fake": await _answer(client, fake, ask),
                }
        yield out
        tg.cancel_scope.cancel()


def _found(pair: dict[str, Any]) -> list[str]:
    return differences(pair["real"], pair["fake"])


@pytest.mark.parametrize("name", [ask.name for ask in ASKS])
async def test_the_fake_answers_as_the_real_service_does(answers: dict[str, Any], name: str) -> None:
    found = _found(answers[name])
    known = KNOWN.get(name, {})
    unexplained = [line for line in found if line not in known]
    gone = [line for line in known if line not in found]
    assert not unexplained, "the fake departs from the real service:\n" + "\n".join(unexplained)
    assert not gone, "KNOWN lists differences that no longer show:\n" + "\n".join(gone)
