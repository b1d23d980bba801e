"""The control endpoint: the clock, health, the inventory metrics, and the browser refusal."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fakecloud_support import T0, T1, Fake, serve, small_world
from prometheus_client import REGISTRY

from tally.simulator import VirtualClock

pytestmark = pytest.mark.anyio


async def test_get_clock_reports_the_virtual_instant_and_progress(fake: Fake) -> None:
    fake.state.progress.published = 7
    fake.state.progress.total = 10
    answer = await fake.client.get(f"{fake.url}/clock")
    assert answer.status_code == 200
    assert answer.json() == {
        "virtual_now": "2026-08-01T00:00:00Z",
        "factor": 0.0,
        "published": 7,
        "total": 10,
        "held": 0,
        "holding": False,
        "period_from": "2026-07-01T00:00:00Z",
        "period_to": "2026-08-01T00:00:00Z",
    }


async def test_put_clock_rebases_and_bad_bodies_get_400(fake: Fake) -> None:
    answer = await fake.client.put(f"{fake.url}/clock", json={"factor": 744, "at": "2026-07-10T00:00:00Z"})
    assert answer.status_code == 200 and answer.json()["factor"] == 744
    assert answer.json()["virtual_now"].startswith("2026-07-10T00:0")
    for body in (
        b"not json",
        b"{}",
        b'{"factor": -1}',
        b'{"factor": "fast"}',
        b'{"factor": 1, "x": 2}',
        b"[1]",
    ):
        bad = await fake.client.put(f"{fake.url}/clock", content=body)
        assert bad.status_code == 400, body
        assert bad.json()["error"]


async def test_the_api_answers_at_min_of_virtual_now_and_period_end() -> None:
    world = small_world()
    clock = VirtualClock(T0 + timedelta(hours=2, minutes=30))
    async with await serve(world, clock) as fake:
        token = await fake.token()
        early = (await fake.get("/compute/v2.1/servers/detail?all_tenants=1", token)).json()["servers"]
        assert {s["name"] for s in early} == {"alpha-web", "beta-db"}
        clock.set(T1 + timedelta(days=40))  # beyond the period: the world stands at its end
        late = (await fake.get("/compute/v2.1/servers/detail?all_tenants=1", token)).json()["servers"]
        assert {s["name"] for s in late} == {"alpha-web", "beta-db", "late"}
        assert next(s for s in late if s["name"] == "beta-db")["status"] == "SHUTOFF"


@pytest.mark.parametrize("header", [{"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}])
async def test_browser_requests_are_refused(fake: Fake, header: dict[str, str]) -> None:
    for method, path in (("GET", "/clock"), ("PUT", "/clock"), ("PUT", "/faults"), ("GET", "/healthz")):
        answer = await fake.client.request(method, f"{fake.url}{path}", headers=header, json={"factor": 1})
        assert answer.status_code == 403, (method, path)
    assert fake.state.clock.factor == 0.0


async def test_healthz_and_metrics(fake: Fake) -> None:
    health = await fake.client.get(f"{fake.url}/healthz")
    assert health.status_code == 200 and health.text.strip() == "ok"
    before = (
        REGISTRY.get_sample_value("tally_sim_api_requests_total", {"service": "compute", "code": "401"})
        or 0.0
    )
    await fake.get("/compute/v2.1/servers/detail")
    after = REGISTRY.get_sample_value("tally_sim_api_requests_total", {"service": "compute", "code": "401"})
    assert after == before + 1
    metrics = (await fake.client.get(f"{fake.url}/metrics")).text
    assert "openstack_nova_total_vms 3.0" in metrics
    assert metrics.count("openstack_nova_server_status{") == 3
    assert "openstack_loadbalancer_total_loadbalancers 2.0" in metrics
    assert "openstack_glance_images 4.0" in metrics


async def test_a_pinned_instant_answers_every_listing_while_the_clock_runs_on() -> None:
    world = small_world()
    clock = VirtualClock(T0 + timedelta(hours=2, minutes=30))
    async with await serve(world, clock) as fake:
        token = await fake.token()
        with fake.state.answering_at(T0 + timedelta(hours=2, minutes=30)):
            clock.set(T0 + timedelta(hours=200))  # the month moves on while the sync lists
            servers = (await fake.get("/compute/v2.1/servers/detail?all_tenants=1", token)).json()
            assert {s["name"] for s in servers["servers"]} == {"alpha-web", "beta-db"}
            beta = next(s for s in servers["servers"] if s["name"] == "beta-db")
            assert beta["status"] == "ACTIVE"  # it is shut off at hour 5, after the pinned instant
            gone = await fake.get("/compute/v2.1/servers/detail?all_tenants=1&deleted=true", token)
            assert gone.json()["servers"] == []  # alpha-gone is deleted at hour 100
        after = (await fake.get("/compute/v2.1/servers/detail?all_tenants=1", token)).json()["servers"]
        assert {s["name"] for s in after} == {"alpha-web", "beta-db"}
        assert next(s for s in after if s["name"] == "beta-db")["status"] == "SHUTOFF"
        deleted = await fake.get("/compute/v2.1/servers/detail?all_tenants=1&deleted=true", token)
        assert [s["name"] for s in deleted.json()["servers"]] == ["alpha-gone"]


async def test_the_inventory_metrics_read_the_pinned_instant(fake: Fake) -> None:
    with fake.state.answering_at(T0):
        text = (await fake.client.get(f"{fake.url}/metrics")).text
    assert "openstack_nova_total_vms 0.0" in text
    assert "openstack_nova_total_vms 0.0" not in (await fake.client.get(f"{fake.url}/metrics")).text
