"""Stock policy for an account without admin: nova refuses all_tenants, the other four narrow silently."""

from __future__ import annotations

import pytest
from fakecloud_support import Fake

pytestmark = pytest.mark.anyio


async def test_nova_answers_all_tenants_with_its_403(fake: Fake) -> None:
    token = await fake.token("member")
    answer = await fake.get("/compute/v2.1/servers/detail?all_tenants=1&limit=1", token)
    assert answer.status_code == 403
    assert answer.json() == {
        "forbidden": {
            "code": 403,
            "message": "Policy doesn't allow os_compute_api:servers:detail:get_all_tenants to be performed.",
        }
    }
    own = await fake.get("/compute/v2.1/servers/detail", token)
    member_project = fake.state.accounts.member.project_id
    assert own.status_code == 200
    assert own.json()["servers"] and all(s["tenant_id"] == member_project for s in own.json()["servers"])


async def test_the_other_four_answer_200_with_only_the_callers_project(fake: Fake) -> None:
    admin = await fake.token("admin")
    member = await fake.token("member")
    mine = fake.state.accounts.member.project_id
    listings = [
        ("/volume/v3/{project}/volumes/detail?all_tenants=1", "volumes", "os-vol-tenant-attr:tenant_id"),
        ("/network/v2.0/floatingips", "floatingips", "project_id"),
        ("/image/v2/images?visibility=private", "images", "owner"),
        ("/load-balancer/v2/lbaas/loadbalancers", "loadbalancers", "project_id"),
    ]
    for template, key, owner in listings:
        as_admin = await fake.get(template.format(project=fake.state.accounts.admin.project_id), admin)
        as_member = await fake.get(template.format(project=mine), member)
        assert as_member.status_code == 200, template
        everyone = {row[owner] for row in as_admin.json()[key]}
        narrowed = {row[owner] for row in as_member.json()[key]}
        assert len(everyone) > 1, template
        assert narrowed == {mine}, template


async def test_member_deleted_filter_is_ignored(fake: Fake) -> None:
    token = await fake.token("member")
    answer = await fake.get("/compute/v2.1/servers/detail?deleted=true", token)
    assert answer.status_code == 200
    assert all(s["status"] != "DELETED" for s in answer.json()["servers"])
