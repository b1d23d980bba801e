"""Each fault of the fake cloud, as the client sees it."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from fakecloud_support import T1, Fake, crowd, serve

from tally.simulator.fakecloud import ApiFaults

pytestmark = pytest.mark.anyio


async def test_a_service_down_answers_503_and_the_others_still_answer(fake: Fake) -> None:
    token = await fake.token()
    fake.state.faults.down.add("network")
    assert (await fake.get("/network/v2.0/floatingips", token)).status_code == 503
    assert (await fake.get("/image/v2/images", token)).status_code == 200


async def test_keystone_down_refuses_tokens(fake: Fake) -> None:
    fake.state.faults.down.add("identity")
    answer = await fake.client.post(f"{fake.url}/v3/auth/tokens", json={})
    assert answer.status_code == 503


async def test_a_slow_service_answers_after_its_latency(fake: Fake) -> None:
    token = await fake.token()
    fake.state.faults.slow["image"] = 0.3
    started = time.monotonic()
    answer = await fake.get("/image/v2/images", token)
    assert answer.status_code == 200
    assert time.monotonic() - started >= 0.3


async def test_a_service_without_service_type_refuses_restricted_credentials(fake: Fake) -> None:
    fake.state.faults.no_service_type.add("block-storage")
    restricted = await fake.token("read-only")
    admin = await fake.token("admin")
    project = fake.state.accounts.admin.project_id
    refused = await fake.get(f"/volume/v3/{project}/volumes/detail?all_tenants=1", restricted)
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == 401
    assert (await fake.get(f"/volume/v3/{project}/volumes/detail", admin)).status_code == 200
    assert (await fake.get("/compute/v2.1/servers/detail?all_tenants=1", restricted)).status_code == 200


async def test_a_listing_fails_on_its_third_page() -> None:
    async with await serve(crowd(50), faults=ApiFaults(fail_third_page={"instance"})) as fake:
        token = await fake.token()
        first = await fake.get("/compute/v2.1/servers/detail?all_tenants=1&limit=10", token)
        marker = first.json()["servers"][-1]["id"]
        second = await fake.get(f"/compute/v2.1/servers/detail?all_tenants=1&limit=10&marker={marker}", token)
        assert second.status_code == 200
        marker = second.json()["servers"][-1]["id"]
        third = await fake.get(f"/compute/v2.1/servers/detail?all_tenants=1&limit=10&marker={marker}", token)
        assert third.status_code == 500
        assert third.json()["computeFault"]["code"] == 500


async def test_the_probe_is_refused_but_the_listing_is_not(fake: Fake) -> None:
    fake.state.faults.probe_refused = True
    token = await fake.token()
    probe = await fake.get("/compute/v2.1/servers/detail?all_tenants=1&limit=1", token)
    assert probe.status_code == 403
    assert "get_all_tenants" in probe.json()["forbidden"]["message"]
    assert (await fake.get("/compute/v2.1/servers/detail?all_tenants=1", token)).status_code == 200


async def test_images_without_owner(fake: Fake) -> None:
    fake.state.faults.images_without_owner = True
    token = await fake.token()
    images = (await fake.get("/image/v2/images", token)).json()["images"]
    assert images and all(image["owner"] is None for image in images)


async def test_flavor_and_volume_type_listings_refused(fake: Fake) -> None:
    fake.state.faults.flavors_refused = True
    fake.state.faults.volume_types_refused = True
    token = await fake.token()
    flavors = await fake.get("/compute/v2.1/flavors/detail", token)
    assert flavors.status_code == 403 and "forbidden" in flavors.json()
    types = await fake.get(f"/volume/v3/{fake.state.accounts.admin.project_id}/types?is_public=None", token)
    assert types.status_code == 403 and "forbidden" in types.json()
    servers = await fake.get("/compute/v2.1/servers/detail?all_tenants=1", token)
    assert servers.status_code == 200


async def test_platform_clock_ahead_shifts_every_timestamp(fake: Fake) -> None:
    token = await fake.token()
    path = "/compute/v2.1/servers/detail?all_tenants=1"
    before = {s["id"]: s["created"] for s in (await fake.get(path, token)).json()["servers"]}
    fake.state.faults.clock_ahead_s = 3600
    after = (await fake.get(path, token)).json()["servers"]
    late = next(s for s in after if s["name"] == "late")
    # created a minute before the end of the period, shown an hour later: after the period itself.
    assert late["created"] == (T1 + timedelta(minutes=59, seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert all(before[s["id"]] != s["created"] for s in after)


async def test_faults_switch_at_run_time_through_the_control_endpoint(fake: Fake) -> None:
    token = await fake.token()
    switched = await fake.client.put(
        f"{fake.url}/faults", json={"down": ["load-balancer"], "probe_refused": True}
    )
    assert switched.status_code == 200 and switched.json()["down"] == ["load-balancer"]
    assert (await fake.get("/load-balancer/v2/lbaas/loadbalancers", token)).status_code == 503
    assert (await fake.client.get(f"{fake.url}/faults")).json()["probe_refused"] is True
    bad = await fake.client.put(f"{fake.url}/faults", json={"down": ["gnocchi"]})
    assert bad.status_code == 400 and "gnocchi" in bad.json()["error"]
    unknown = await fake.client.put(f"{fake.url}/faults", json={"meteor": True})
    assert unknown.status_code == 400
    cleared = await fake.client.put(f"{fake.url}/faults", json={"down": []})
    assert cleared.status_code == 200
    assert (await fake.get("/load-balancer/v2/lbaas/loadbalancers", token)).status_code == 200


def test_faults_from_a_command_line_list() -> None:
    faults = ApiFaults.from_names("down=network+image,slow=compute:2.5,probe_refused,clock_ahead_s=90")
    assert faults.down == {"network", "image"}
    assert faults.slow == {"compute": 2.5}
    assert faults.probe_refused and faults.clock_ahead_s == 90
