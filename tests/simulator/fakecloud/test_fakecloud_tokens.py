"""The fake keystone's token checks, as keystone answers them (keystone/api/auth.py AuthTokenResource,
keystone/common/policies/token.py, keystone/models/token_model.py rendered by render_token).

GET/HEAD /v3/auth/tokens answer the subject token's document (scope and roles) to an admin, a service
or the token's own user, 403 to anyone else, 404 ``Could not find token: <id>.`` for a token unknown,
revoked or expired; DELETE revokes; a domain-scoped token names its domain and no project.
"""

from __future__ import annotations

from typing import Any

import pytest
from fakecloud_support import Fake

pytestmark = pytest.mark.anyio


async def issue(fake: Fake, user: str, scope: dict[str, Any]) -> str:
    body = {
        "auth": {
            "identity": {
                "methods": ["password"],
                "password": {
                    "user": {"name": user, "domain": {"name": "Default"}, "password": f"{user}-password"}
                },
            },
            "scope": scope,
        }
    }
    answer = await fake.client.post(f"{fake.url}/v3/auth/tokens", json=body)
    assert answer.status_code == 201, answer.text
    return answer.headers["X-Subject-Token"]


async def check(fake: Fake, caller: str, subject: str, method: str = "GET") -> Any:
    return await fake.client.request(
        method, f"{fake.url}/v3/auth/tokens", headers={"X-Auth-Token": caller, "X-Subject-Token": subject}
    )


async def test_an_admin_reads_a_project_tokens_scope_and_roles(fake: Fake) -> None:
    member = fake.state.accounts.member
    fake.state.accounts.add_tenant("reader", member.project_id, member.project_name, ("reader",))
    subject = await issue(fake, "reader", {"project": {"id": member.project_id}})
    answer = await check(fake, await fake.token("admin"), subject)
    assert answer.status_code == 200
    assert answer.headers["X-Subject-Token"] == subject
    token = answer.json()["token"]
    assert token["project"]["id"] == member.project_id and "domain" not in token
    assert [r["name"] for r in token["roles"]] == ["reader"]
    assert token["expires_at"].endswith("Z")
    head = await check(fake, await fake.token("admin"), subject, "HEAD")
    assert head.status_code == 200 and head.content == b""


async def test_a_domain_token_names_its_domain_and_no_project(fake: Fake) -> None:
    member = fake.state.accounts.member
    fake.state.accounts.add_tenant(
        "auditor", member.project_id, member.project_name, (), domain_roles=("reader",)
    )
    subject = await issue(fake, "auditor", {"domain": {"name": "Default"}})
    token = (await check(fake, await fake.token("admin"), subject)).json()["token"]
    assert token["domain"] == {"id": "default", "name": "Default"}
    assert "project" not in token and [r["name"] for r in token["roles"]] == ["reader"]
    # A user without roles on the domain gets no domain-scoped token.
    refused = await fake.client.post(
        f"{fake.url}/v3/auth/tokens",
        json={
            "auth": {
                "identity": {
                    "methods": ["password"],
                    "password": {
                        "user": {
                            "name": "tally-member",
                            "domain": {"name": "Default"},
                            "password": "tally-dev-member-password",
                        }
                    },
                },
                "scope": {"domain": {"name": "Default"}},
            }
        },
    )
    assert refused.status_code == 401


async def test_only_an_admin_or_the_tokens_own_user_may_check_it(fake: Fake) -> None:
    member = await fake.token("member")
    admin = await fake.token("admin")
    assert (await check(fake, member, admin)).status_code == 403
    assert (await check(fake, member, member)).status_code == 200


async def test_an_unknown_or_revoked_token_is_404_could_not_find_token(fake: Fake) -> None:
    admin = await fake.token("admin")
    member = await fake.token("member")
    unknown = await check(fake, admin, "gAAAAAnope")
    assert unknown.status_code == 404
    assert unknown.json()["error"]["message"] == "Could not find token: gAAAAAnope."
    revoked = await fake.client.delete(
        f"{fake.url}/v3/auth/tokens", headers={"X-Auth-Token": admin, "X-Subject-Token": member}
    )
    assert revoked.status_code == 204
    assert (await check(fake, admin, member)).status_code == 404
    again = await fake.client.delete(
        f"{fake.url}/v3/auth/tokens", headers={"X-Auth-Token": admin, "X-Subject-Token": member}
    )
    assert again.status_code == 404


async def test_an_admin_lists_the_projects_of_a_domain(fake: Fake) -> None:
    admin = await fake.token("admin")
    listed = await fake.get("/v3/projects?domain_id=default", admin)
    assert listed.status_code == 200
    ids = {p["id"] for p in listed.json()["projects"]}
    assert fake.state.accounts.member.project_id in ids and fake.state.accounts.admin.project_id in ids
    assert (await fake.get("/v3/projects?domain_id=other", admin)).json()["projects"] == []
    assert (await fake.get("/v3/projects?domain_id=default", await fake.token("member"))).status_code == 403
