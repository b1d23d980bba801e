"""The fake keystone's application credentials and token method, over real HTTP, held to keystone's
answers (its api-ref samples for the shapes, its refusals for the rules)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakecloud_support import Fake

from tally.simulator.fakecloud import READ_ONLY_RULES

pytestmark = pytest.mark.anyio

SAMPLES = Path(__file__).parents[2] / "openstack" / "api_samples"


def sample(name: str) -> Any:
    return json.loads((SAMPLES / name).read_text())


def creds_url(fake: Fake, user_id: str | None = None) -> str:
    return f"{fake.url}/v3/users/{user_id or fake.state.accounts.admin.id}/application_credentials"


async def create(fake: Fake, token: str, doc: dict[str, Any], user_id: str | None = None) -> Any:
    return await fake.client.post(
        creds_url(fake, user_id), json={"application_credential": doc}, headers={"X-Auth-Token": token}
    )


async def app_cred_token(fake: Fake, cred_id: str, secret: str) -> str:
    body = {
        "auth": {
            "identity": {
                "methods": ["application_credential"],
                "application_credential": {"id": cred_id, "secret": secret},
            }
        }
    }
    answer = await fake.client.post(f"{fake.url}/v3/auth/tokens", json=body)
    assert answer.status_code == 201, answer.text
    return answer.headers["X-Subject-Token"]


async def test_create_list_show_delete_answer_in_keystones_shapes(fake: Fake) -> None:
    token = await fake.token()
    request = sample("keystone-application-credential-create-request.json")["application_credential"]
    request = {**request, "roles": [{"name": "admin"}], "expires_at": "2099-02-27T18:30:59Z"}
    answer = await create(fake, token, request)
    assert answer.status_code == 201, answer.text
    created = answer.json()["application_credential"]
    expected = sample("keystone-application-credential-create-response.json")["application_credential"]
    assert sorted(created) == sorted(expected)
    assert (created["name"], created["secret"], created["unrestricted"]) == (
        "monitoring",
        "rEaqvJka48mpv",
        False,
    )
    assert created["expires_at"] == "2099-02-27T18:30:59.000000"
    assert [r["name"] for r in created["roles"]] == ["admin"]
    (rule,) = created["access_rules"]
    assert {k: rule[k] for k in ("service", "method", "path")} == request["access_rules"][0] and rule["id"]

    listed = (await fake.client.get(creds_url(fake), headers={"X-Auth-Token": token})).json()
    assert sorted(listed) == sorted(sample("keystone-application-credential-list-response.json"))
    assert "monitoring" in {c["name"] for c in listed["application_credentials"]}
    assert all("secret" not in c for c in listed["application_credentials"])
    named = await fake.client.get(
        creds_url(fake), params={"name": "monitoring"}, headers={"X-Auth-Token": token}
    )
    assert [c["id"] for c in named.json()["application_credentials"]] == [created["id"]]

    shown = await fake.client.get(f"{creds_url(fake)}/{created['id']}", headers={"X-Auth-Token": token})
    want = sample("keystone-application-credential-get-response.json")["application_credential"]
    assert sorted(shown.json()["application_credential"]) == sorted(want)

    gone = await fake.client.delete(f"{creds_url(fake)}/{created['id']}", headers={"X-Auth-Token": token})
    assert gone.status_code == 204
    again = await fake.client.get(f"{creds_url(fake)}/{created['id']}", headers={"X-Auth-Token": token})
    assert again.status_code == 404


async def test_a_created_credential_authenticates_and_its_rules_are_enforced(fake: Fake) -> None:
    token = await fake.token()
    answer = await create(fake, token, {"name": "reader", "access_rules": [dict(r) for r in READ_ONLY_RULES]})
    cred = answer.json()["application_credential"]
    scoped = await app_cred_token(fake, cred["id"], cred["secret"])
    allowed = await fake.get("/compute/v2.1/servers/detail?all_tenants=1", scoped)
    assert allowed.status_code == 200
    refused = await fake.client.get(creds_url(fake), headers={"X-Auth-Token": scoped})
    assert refused.status_code == 401  # no rule names keystone's own API


@pytest.mark.parametrize(
    ("doc", "code", "words"),
    [
        ({"name": "tally-unrestricted"}, 409, "Duplicate entry found with name tally-unrestricted"),
        ({"name": "x", "roles": [{"name": "superuser"}]}, 400, "unassigned role"),
        ({"description": "no name"}, 400, "'name' is a required property"),
        ({"name": "x", "access_rules": [{"service": "compute", "method": "BREW", "path": "/"}]}, 400, "BREW"),
        ({"name": "x", "expires_at": "tomorrow"}, 400, "expires_at"),
    ],
)
async def test_keystone_refuses_what_it_refuses(
    fake: Fake, doc: dict[str, Any], code: int, words: str
) -> None:
    answer = await create(fake, await fake.token(), doc)
    assert answer.status_code == code
    assert words in answer.json()["error"]["message"]


async def test_only_the_user_itself_manages_its_credentials(fake: Fake) -> None:
    member = await fake.token("member")
    answer = await create(fake, member, {"name": "theirs"})
    assert answer.status_code == 403
    assert "another user" in answer.json()["error"]["message"]
    listed = await fake.client.get(creds_url(fake), headers={"X-Auth-Token": member})
    assert listed.status_code == 403


async def test_a_credential_that_is_not_unrestricted_manages_no_credential(fake: Fake) -> None:
    scoped = await fake.token("unrestricted")  # no access rule, but not keystone's unrestricted flag
    answer = await create(fake, scoped, {"name": "child"})
    assert answer.status_code == 403
    assert "not allowed for managing additional application credentials" in answer.json()["error"]["message"]
    parent = (await create(fake, await fake.token(), {"name": "parent", "unrestricted": True})).json()
    child = await create(
        fake,
        await app_cred_token(
            fake, parent["application_credential"]["id"], parent["application_credential"]["secret"]
        ),
        {"name": "child"},
    )
    assert child.status_code == 201


async def test_token_method_renews_a_token_to_the_same_expiry(fake: Fake) -> None:
    first = await fake.token()
    body = {"auth": {"identity": {"methods": ["token"], "token": {"id": first}}}}
    answer = await fake.client.post(f"{fake.url}/v3/auth/tokens", json=body)
    assert answer.status_code == 201, answer.text
    renewed = answer.json()["token"]
    original = fake.state.accounts.validate(first)
    assert original is not None
    assert renewed["methods"] == ["password", "token"]
    assert renewed["project"]["id"] == original.project_id
    assert renewed["expires_at"].startswith(original.expires_at.strftime("%Y-%m-%dT%H:%M:%S"))
    servers = await fake.get("/compute/v2.1/servers/detail?all_tenants=1", answer.headers["X-Subject-Token"])
    assert servers.status_code == 200


async def test_token_method_refuses_an_unknown_token_and_a_scoped_credential_token(fake: Fake) -> None:
    unknown = {"auth": {"identity": {"methods": ["token"], "token": {"id": "gAAAAAnope"}}}}
    answer = await fake.client.post(f"{fake.url}/v3/auth/tokens", json=unknown)
    assert answer.status_code == 404
    scoped = await fake.token("read-only")
    body = {
        "auth": {
            "identity": {"methods": ["token"], "token": {"id": scoped}},
            "scope": {"project": {"id": fake.state.accounts.admin.project_id}},
        }
    }
    answer = await fake.client.post(f"{fake.url}/v3/auth/tokens", json=body)
    assert answer.status_code == 403
    assert "application credential token to create a scoped token" in answer.json()["error"]["message"]
    unscoped = {"auth": {"identity": {"methods": ["token"], "token": {"id": scoped}}}}
    answer = await fake.client.post(f"{fake.url}/v3/auth/tokens", json=unscoped)
    assert answer.status_code == 201
    # Renewed, the credential's rules still hold.
    assert answer.json()["token"]["application_credential"]["access_rules"]
    refused = await fake.client.get(
        creds_url(fake), headers={"X-Auth-Token": answer.headers["X-Subject-Token"]}
    )
    assert refused.status_code == 401
