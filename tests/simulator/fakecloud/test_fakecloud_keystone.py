"""Keystone of the fake cloud: tokens, the catalog, refusals, and application credentials' access rules."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fakecloud_support import Fake, password_auth

from tally.simulator.fakecloud import ADMIN_PASSWORD, ADMIN_USER
from tally.simulator.fakecloud._keystone import rules_allow

pytestmark = pytest.mark.anyio

UNAUTHORIZED = {
    "error": {
        "code": 401,
        "title": "Unauthorized",
        "message": "The request you have made requires authentication.",
    }
}


async def test_password_token_has_roles_project_and_a_catalog_on_the_request_host(fake: Fake) -> None:
    answer = await fake.client.post(
        f"{fake.url}/v3/auth/tokens",
        json=password_auth(ADMIN_USER, ADMIN_PASSWORD, "service"),
        headers={"Host": "cloud.example:5000"},
    )
    assert answer.status_code == 201
    assert answer.headers["X-Subject-Token"]
    token = answer.json()["token"]
    assert token["methods"] == ["password"]
    assert token["project"]["name"] == "service"
    assert {r["name"] for r in token["roles"]} >= {"admin"}
    assert token["expires_at"].endswith("Z") and len(token["expires_at"]) == len(
        "2026-01-01T10:00:00.000000Z"
    )
    types = {entry["type"]: entry for entry in token["catalog"]}
    assert set(types) == {
        "identity",
        "compute",
        "block-storage",
        "volumev3",
        "network",
        "image",
        "load-balancer",
    }
    compute = types["compute"]["endpoints"]
    assert {e["interface"] for e in compute} == {"public", "internal", "admin"}
    assert all(e["region"] == e["region_id"] == "RegionOne" for e in compute)
    assert compute[0]["url"] == "http://cloud.example:5000/compute/v2.1"
    assert types["block-storage"]["endpoints"][0]["url"].endswith(f"/volume/v3/{token['project']['id']}")


async def test_wrong_password_gets_keystones_401_body_and_www_authenticate(fake: Fake) -> None:
    answer = await fake.client.post(
        f"{fake.url}/v3/auth/tokens", json=password_auth(ADMIN_USER, "nope", "service")
    )
    assert answer.status_code == 401
    assert answer.json() == UNAUTHORIZED
    assert answer.headers["WWW-Authenticate"].startswith('Keystone uri="http://127.0.0.1:')


async def test_application_credential_token_carries_the_credential(fake: Fake) -> None:
    cred = fake.state.accounts.credential("read-only")
    answer = await fake.client.post(
        f"{fake.url}/v3/auth/tokens",
        json={
            "auth": {
                "identity": {
                    "methods": ["application_credential"],
                    "application_credential": {"id": cred.id, "secret": cred.secret},
                }
            }
        },
    )
    assert answer.status_code == 201
    token = answer.json()["token"]
    assert token["methods"] == ["application_credential"]
    assert token["application_credential"]["id"] == cred.id
    assert len(token["application_credential"]["access_rules"]) == 8
    assert token["project"]["name"] == "service"


@pytest.mark.parametrize("kind", ["expired", "deleted"])
async def test_expired_or_deleted_credential_is_refused(fake: Fake, kind: str) -> None:
    cred = fake.state.accounts.credential(kind)
    body = {
        "auth": {
            "identity": {
                "methods": ["application_credential"],
                "application_credential": {"id": cred.id, "secret": cred.secret},
            }
        }
    }
    answer = await fake.client.post(f"{fake.url}/v3/auth/tokens", json=body)
    assert answer.status_code == 401
    assert answer.json() == UNAUTHORIZED


async def test_credential_without_secret_is_a_400(fake: Fake) -> None:
    cred = fake.state.accounts.credential("unrestricted")
    body = {
        "auth": {
            "identity": {"methods": ["application_credential"], "application_credential": {"id": cred.id}}
        }
    }
    answer = await fake.client.post(f"{fake.url}/v3/auth/tokens", json=body)
    assert answer.status_code == 400
    assert answer.json()["error"]["message"].startswith("Expecting to find secret in application_credential.")


async def test_credential_with_a_scope_is_refused(fake: Fake) -> None:
    cred = fake.state.accounts.credential("unrestricted")
    body = {
        "auth": {
            "identity": {
                "methods": ["application_credential"],
                "application_credential": {"id": cred.id, "secret": cred.secret},
            },
            "scope": {"project": {"name": "service", "domain": {"name": "Default"}}},
        }
    }
    answer = await fake.client.post(f"{fake.url}/v3/auth/tokens", json=body)
    assert answer.status_code == 401


async def test_a_listing_without_a_token_is_401(fake: Fake) -> None:
    answer = await fake.get("/compute/v2.1/servers/detail")
    assert answer.status_code == 401
    assert answer.json() == UNAUTHORIZED


async def test_read_only_credential_reads_the_eight_paths_and_nothing_else(fake: Fake) -> None:
    token = await fake.token("read-only")
    project = fake.state.accounts.admin.project_id
    allowed = [
        "/compute/v2.1/",
        "/compute/v2.1/servers/detail?all_tenants=1&limit=1",
        "/compute/v2.1/flavors/detail",
        f"/volume/v3/{project}/volumes/detail?all_tenants=1",
        f"/volume/v3/{project}/types?is_public=None",
        "/network/v2.0/floatingips",
        "/image/v2/images",
        "/load-balancer/v2/lbaas/loadbalancers",
    ]
    for path in allowed:
        answer = await fake.get(path, token)
        assert answer.status_code == 200, (path, answer.status_code)
    # Version documents of glance, neutron and octavia are answered before keystonemiddleware.
    for path in ("/image/", "/network/", "/load-balancer/"):
        assert (await fake.get(path, token)).status_code in (200, 300)
    refused = await fake.client.delete(
        f"{fake.url}/compute/v2.1/servers/detail", headers={"X-Auth-Token": token}
    )
    assert refused.status_code in (401, 405)
    # A path no rule names: the plain server list (not detail).
    plain = await fake.get("/compute/v2.1/servers", token)
    assert plain.status_code in (401, 404)


async def test_a_request_no_rule_matches_is_401_from_that_service(fake: Fake) -> None:
    # A credential created with seven rules, without the one for cinder's types.
    cred = fake.state.accounts.credential("read-only")
    seven = tuple(r for r in cred.access_rules or () if not r["path"].endswith("/types"))
    fake.state.accounts.credentials[cred.id] = replace(cred, access_rules=seven)
    token = await fake.token("read-only")
    project = fake.state.accounts.admin.project_id
    answer = await fake.get(f"/volume/v3/{project}/types", token)
    assert answer.status_code == 401
    assert answer.json() == UNAUTHORIZED
    assert (await fake.get(f"/volume/v3/{project}/volumes/detail", token)).status_code == 200


def test_double_star_matches_across_slashes_at_the_start() -> None:
    rules = [{"service": "compute", "method": "GET", "path": "/**/servers/detail"}]
    for path in (
        "/v2.1/servers/detail",
        "/v2.1/0123456789abcdef0123456789abcdef/servers/detail",
        "/compute/v2.1/servers/detail",
    ):
        assert rules_allow(rules, "compute", "GET", path)
    assert not rules_allow(rules, "compute", "GET", "/v2.1/servers/detail/extra")
    assert not rules_allow(rules, "compute", "POST", "/v2.1/servers/detail")
    assert not rules_allow(rules, "block-storage", "GET", "/v2.1/servers/detail")
    version = [{"service": "compute", "method": "GET", "path": "/**/"}]
    assert rules_allow(version, "compute", "GET", "/v2.1/")
    assert rules_allow(version, "compute", "GET", "/compute/v2.1/")
    assert not rules_allow(version, "compute", "GET", "/v2.1/servers")
    single = [{"service": "image", "method": "GET", "path": "/v2/images/*"}]
    assert rules_allow(single, "image", "GET", "/v2/images/abc")
    assert not rules_allow(single, "image", "GET", "/v2/images/abc/file")
