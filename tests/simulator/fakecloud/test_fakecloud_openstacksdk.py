"""The official client against the fake: openstacksdk through a clouds.yaml entry gets exactly the world."""

from __future__ import annotations

import functools
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from fakecloud_support import T0, crowd, serve, small_world

from tally.simulator import World

pytestmark = pytest.mark.anyio


def _clouds_yaml(tmp_path: Path, port: int, auth: dict[str, Any], auth_type: str = "password") -> Path:
    entry = {
        "auth_type": auth_type,
        "auth": {"auth_url": f"http://127.0.0.1:{port}/v3", **auth},
        "region_name": "RegionOne",
        "interface": "public",
        "identity_api_version": 3,
    }
    path = tmp_path / "clouds.yaml"
    path.write_text(yaml.safe_dump({"clouds": {"fake": entry}}))
    return path


def _list_everything(config: Path, since: str, **page: Any) -> dict[str, set[str]]:
    import openstack

    os.environ["OS_CLIENT_CONFIG_FILE"] = str(config)
    try:
        conn = openstack.connect(cloud="fake")
        return {
            "instance": {s.id for s in conn.compute.servers(all_projects=True, **page)},
            "deleted": {
                s.id
                for s in conn.compute.servers(all_projects=True, deleted=True, changes_since=since, **page)
            },
            "volume": {v.id for v in conn.block_storage.volumes(all_projects=True, **page)},
            "floating_ip": {f.id for f in conn.network.ips(**page)},
            "image": {i.id for i in conn.image.images(visibility="all", **page)},
            "loadbalancer": {lb.id for lb in conn.load_balancer.load_balancers(**page)},
        }
    finally:
        del os.environ["OS_CLIENT_CONFIG_FILE"]


def _expected(world: World) -> dict[str, set[str]]:
    end = world.period_to
    out = {t: {r.resource_id for r in world.of_type(t) if r.alive_at(end)} for t in world_types()}
    out["deleted"] = {
        r.resource_id for r in world.of_type("instance") if r.terminated_at and r.terminated_at <= end
    }
    return out


def world_types() -> tuple[str, ...]:
    return ("instance", "volume", "floating_ip", "image", "loadbalancer")


async def test_openstacksdk_with_a_password_lists_exactly_the_world(tmp_path: Path) -> None:
    world = small_world()
    async with await serve(world) as fake:
        port = int(fake.url.rsplit(":", 1)[1])
        config = _clouds_yaml(
            tmp_path,
            port,
            {
                "username": "tally-sync",
                "password": "tally-dev-sync-password",
                "project_name": "service",
                "user_domain_name": "Default",
                "project_domain_name": "Default",
            },
        )
        since = (T0 + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        seen = await anyio.to_thread.run_sync(_list_everything, config, since)
    assert seen == _expected(world)
    assert seen["deleted"] and seen["instance"] and seen["loadbalancer"]


async def test_openstacksdk_with_the_read_only_credential_follows_every_page(tmp_path: Path) -> None:
    world = crowd(250)
    async with await serve(world) as fake:
        port = int(fake.url.rsplit(":", 1)[1])
        cred = fake.state.accounts.credential("read-only")
        config = _clouds_yaml(
            tmp_path,
            port,
            {"application_credential_id": cred.id, "application_credential_secret": cred.secret},
            auth_type="v3applicationcredential",
        )
        requests = fake.state.page_counters
        seen = await anyio.to_thread.run_sync(
            functools.partial(_list_everything, config, "2026-07-01T00:00:00Z", limit=100)
        )
        # Each listing went past its first page (three pages of 100 for 250 resources).
        assert all(
            requests.get(kind, 0) >= 3 for kind in ("instance", "volume", "floating_ip", "loadbalancer")
        )
    expected = _expected(world)
    for key, ids in expected.items():
        assert seen[key] == ids, key
    assert len(seen["volume"]) == 250
