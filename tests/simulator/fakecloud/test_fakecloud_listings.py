"""The five listings as the real services answer them: fields, formats, microversions, pagination."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from fakecloud_support import T0, Fake, crowd, serve
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.anyio

Z_SECONDS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
NAIVE_MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$")
NAIVE_SECONDS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$")


async def test_nova_version_documents_need_no_token_at_the_root(fake: Fake) -> None:
    root = await fake.get("/compute/")
    assert root.status_code == 200
    current = next(v for v in root.json()["versions"] if v["id"] == "v2.1")
    assert current["status"] == "CURRENT" and current["min_version"] == "2.1"
    token = await fake.token()
    single = await fake.get("/compute/v2.1/", token)
    assert single.json()["version"]["version"] == current["version"]


async def test_microversion_is_echoed_and_bounded(fake: Fake) -> None:
    token = await fake.token()
    answer = await fake.get(
        "/compute/v2.1/servers/detail?all_tenants=1", token, headers={"OpenStack-API-Version": "compute 2.47"}
    )
    assert answer.status_code == 200
    assert answer.headers["OpenStack-API-Version"] == "compute 2.47"
    assert answer.headers["X-OpenStack-Nova-API-Version"] == "2.47"
    flavor = answer.json()["servers"][0]["flavor"]
    assert set(flavor) >= {"original_name", "vcpus", "ram", "disk", "ephemeral"}
    legacy = await fake.get("/compute/v2.1/servers/detail?all_tenants=1", token)
    assert legacy.headers["OpenStack-API-Version"] == "compute 2.1"
    assert set(legacy.json()["servers"][0]["flavor"]) == {"id", "links"}
    too_new = await fake.get(
        "/compute/v2.1/servers/detail", token, headers={"X-OpenStack-Nova-API-Version": "2.999"}
    )
    assert too_new.status_code == 406
    assert "Version 2.999 is not supported by the API. Minimum is 2.1" in too_new.text
    bad = await fake.get(
        "/compute/v2.1/servers/detail", token, headers={"OpenStack-API-Version": "compute two"}
    )
    assert bad.status_code == 400


async def test_servers_show_nova_fields_and_formats(fake: Fake) -> None:
    token = await fake.token()
    answer = await fake.get(
        "/compute/v2.1/servers/detail?all_tenants=1", token, headers={"OpenStack-API-Version": "compute 2.96"}
    )
    servers = {s["name"]: s for s in answer.json()["servers"]}
    assert set(servers) == {"alpha-web", "beta-db", "late"}  # deleted ones hidden by default
    web = servers["alpha-web"]
    assert web["status"] == "ACTIVE" and web["OS-EXT-STS:vm_state"] == "active"
    assert web["OS-EXT-STS:task_state"] is None and web["OS-EXT-STS:power_state"] == 1
    assert Z_SECONDS.match(web["created"]) and Z_SECONDS.match(web["updated"])
    assert NAIVE_MICRO.match(web["OS-SRV-USG:launched_at"])
    assert web["OS-SRV-USG:terminated_at"] is None
    assert len(web["tenant_id"]) == 32
    assert (
        servers["beta-db"]["status"] == "SHUTOFF" and servers["beta-db"]["OS-EXT-STS:vm_state"] == "stopped"
    )
    late = servers["late"]
    assert late["status"] == "BUILD" and late["OS-EXT-STS:vm_state"] == "building"
    assert late["OS-EXT-STS:task_state"] == "spawning"


async def test_deleted_and_changes_since(fake: Fake) -> None:
    token = await fake.token()
    since = (T0 + timedelta(hours=99)).strftime("%Y-%m-%dT%H:%M:%SZ")
    deleted = await fake.get(
        f"/compute/v2.1/servers/detail?all_tenants=1&deleted=true&changes-since={since}", token
    )
    rows = deleted.json()["servers"]
    assert [r["name"] for r in rows] == ["alpha-gone"]
    assert rows[0]["status"] == "DELETED" and rows[0]["OS-EXT-STS:vm_state"] == "deleted"
    assert rows[0]["OS-SRV-USG:terminated_at"] == "2026-07-05T04:00:05.000000"
    later = (T0 + timedelta(hours=101)).strftime("%Y-%m-%dT%H:%M:%SZ")
    none = await fake.get(
        f"/compute/v2.1/servers/detail?all_tenants=1&deleted=true&changes-since={later}", token
    )
    assert none.json()["servers"] == []
    # changes-since without deleted includes the deleted servers changed since.
    mixed = await fake.get(f"/compute/v2.1/servers/detail?all_tenants=1&changes-since={since}", token)
    assert {r["name"] for r in mixed.json()["servers"]} == {"alpha-gone", "late"}


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("changes-since=yesterday", "changes-since"),
        (
            "marker=00000000-0000-0000-0000-000000000000",
            "marker [00000000-0000-0000-0000-000000000000] not found",
        ),
        ("limit=-1", "limit"),
    ],
)
async def test_nova_refuses_malformed_parameters_with_400(fake: Fake, query: str, message: str) -> None:
    token = await fake.token()
    answer = await fake.get(f"/compute/v2.1/servers/detail?all_tenants=1&{query}", token)
    assert answer.status_code == 400
    assert message in answer.json()["badRequest"]["message"]


async def test_unknown_parameters_are_ignored(fake: Fake) -> None:
    token = await fake.token()
    answer = await fake.get("/compute/v2.1/servers/detail?all_tenants=1&colour=blue", token)
    assert answer.status_code == 200 and len(answer.json()["servers"]) == 3
    glance = await fake.get("/image/v2/images?colour=blue", token)
    assert glance.status_code == 200


async def test_flavors_detail(fake: Fake) -> None:
    token = await fake.token()
    answer = await fake.get("/compute/v2.1/flavors/detail", token)
    flavors = {f["name"]: f for f in answer.json()["flavors"]}
    assert flavors["m1.large"]["OS-FLV-EXT-DATA:ephemeral"] == 40
    assert flavors["m1.large"]["ram"] == 8192 and flavors["m1.large"]["vcpus"] == 4
    assert flavors["m1.small"]["swap"] == ""  # before 2.75 nova writes "" for no swap


async def test_cinder_volumes_and_types(fake: Fake) -> None:
    token = await fake.token()
    project = fake.state.accounts.admin.project_id
    answer = await fake.get(f"/volume/v3/{project}/volumes/detail?all_tenants=1", token)
    volumes = answer.json()["volumes"]
    assert len(volumes) == 2
    data = next(v for v in volumes if v["name"] == "alpha-data")
    assert data["volume_type"] == "ssd" and "volume_type_id" not in data
    assert data["size"] == 50 and data["status"] == "available"
    # Real cinder writes the row again when the create finishes (seen on cinder 29): a volume resting
    # since its creation shows that instant, never null.
    assert NAIVE_MICRO.match(data["created_at"]) and data["updated_at"] == data["created_at"]
    growing = next(v for v in volumes if v["name"] != "alpha-data")
    assert growing["status"] == "extending" and growing["size"] == 20  # the new size once it is done
    assert NAIVE_MICRO.match(growing["updated_at"])
    modern = await fake.get(
        f"/volume/v3/{project}/volumes/detail?all_tenants=1",
        token,
        headers={"OpenStack-API-Version": "volume 3.63"},
    )
    assert all("volume_type_id" in v for v in modern.json()["volumes"])
    public = await fake.get(f"/volume/v3/{project}/types", token)
    assert [t["name"] for t in public.json()["volume_types"]] == ["ssd"]
    everything = await fake.get(f"/volume/v3/{project}/types?is_public=None", token)
    assert sorted(t["name"] for t in everything.json()["volume_types"]) == ["ssd", "vault"]
    bad = await fake.get(f"/volume/v3/{project}/types?is_public=maybe", token)
    assert bad.status_code == 400


async def test_neutron_glance_octavia_fields(fake: Fake) -> None:
    token = await fake.token()
    fips = (await fake.get("/network/v2.0/floatingips", token)).json()
    assert "floatingips_links" not in fips  # no pagination without limit
    addresses = {f["floating_ip_address"] for f in fips["floatingips"]}
    assert addresses == {"203.0.113.7", "203.0.113.9"}
    fip = fips["floatingips"][0]
    assert fip["tenant_id"] == fip["project_id"] and Z_SECONDS.match(fip["created_at"])

    images = (await fake.get("/image/v2/images", token)).json()
    names = {i["name"]: i for i in images["images"]}
    assert len(names) == 3  # the community image needs visibility=all
    assert names["beta-upload"]["status"] == "queued" and names["beta-upload"]["size"] is None
    assert names["alpha-img"]["size"] == 2**30 and names["alpha-img"]["owner"]
    assert any(i["status"] == "deactivated" for i in images["images"])
    assert images["first"].startswith("/v2/images") and "next" not in images
    everything = (await fake.get("/image/v2/images?visibility=all", token)).json()
    assert len(everything["images"]) == 4

    lbs = (await fake.get("/load-balancer/v2/lbaas/loadbalancers", token)).json()["loadbalancers"]
    assert len(lbs) == 2  # the DELETED one is never listed
    statuses = {lb["provisioning_status"] for lb in lbs}
    assert statuses == {"ACTIVE", "PENDING_DELETE"}
    active = next(lb for lb in lbs if lb["provisioning_status"] == "ACTIVE")
    assert len(active["listeners"]) == 2 and len(active["pools"]) == 1
    assert set(active["listeners"][0]) == {"id"}
    # Octavia writes the row again when the provider reports it ACTIVE (seen on octavia 19).
    assert NAIVE_SECONDS.match(active["created_at"]) and active["updated_at"] == active["created_at"]


async def _walk(fake: Fake, token: str, path: str, key: str, next_of: Any) -> tuple[list[str], int]:
    ids: list[str] = []
    pages = 0
    url: str | None = path
    while url is not None:
        answer = await fake.get(url, token)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        pages += 1
        ids.extend(item["id"] for item in body[key])
        url = next_of(body)
    return ids, pages


def _link(key: str) -> Any:
    def next_of(body: dict[str, Any]) -> str | None:
        for link in body.get(key, []):
            if link["rel"] == "next":
                return str(link["href"]).split("127.0.0.1", 1)[1].split("/", 1)[1].join(["/", ""])
        return None

    return next_of


async def test_five_thousand_of_a_type_take_several_pages_and_every_page_joins_up() -> None:
    world = crowd(5000)
    async with await serve(world) as fake:
        token = await fake.token()
        project = fake.state.accounts.admin.project_id
        alive_vms = {r.resource_id for r in world.of_type("instance") if r.terminated_at is None}
        ids, pages = await _walk(
            fake, token, "/compute/v2.1/servers/detail?all_tenants=1", "servers", _link("servers_links")
        )
        assert set(ids) == alive_vms and len(ids) == len(alive_vms) and pages == 5
        ids, pages = await _walk(
            fake,
            token,
            f"/volume/v3/{project}/volumes/detail?all_tenants=1",
            "volumes",
            _link("volumes_links"),
        )
        assert len(set(ids)) == 5000 and pages == 6  # a full last page still links to an empty one
        ids, pages = await _walk(
            fake, token, "/network/v2.0/floatingips?limit=1000", "floatingips", _link("floatingips_links")
        )
        assert len(set(ids)) == 5000 and pages == 6
        ids, pages = await _walk(
            fake,
            token,
            "/image/v2/images?limit=1000",
            "images",
            lambda body: ("/image" + body["next"]) if "next" in body else None,
        )
        assert len(set(ids)) == 5000 and pages == 6
        first = (await fake.get("/image/v2/images", token)).json()
        assert len(first["images"]) == 25 and first["next"].startswith(
            "/v2/images?marker="
        )  # glance's default
        ids, pages = await _walk(
            fake,
            token,
            "/load-balancer/v2/lbaas/loadbalancers",
            "loadbalancers",
            _link("loadbalancers_links"),
        )
        assert len(set(ids)) == 5000 and pages == 6


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(limit=st.integers(min_value=1, max_value=40), hours=st.integers(min_value=0, max_value=800))
async def test_paging_at_any_instant_and_limit_lists_exactly_the_live_servers(limit: int, hours: int) -> None:
    world = crowd(60)
    instant = T0 + timedelta(hours=hours)
    from tally.simulator import VirtualClock

    async with await serve(world, VirtualClock(instant)) as fake:
        token = await fake.token()
        ids, _ = await _walk(
            fake,
            token,
            f"/compute/v2.1/servers/detail?all_tenants=1&limit={limit}",
            "servers",
            _link("servers_links"),
        )
    expected = [r.resource_id for r in world.of_type("instance") if r.alive_at(instant)]
    assert ids == expected
