"""Authentication through keystoneauth1, end to end against the fake cloud over real HTTP.

The plugins the fake's keystone serves (password, with domains or a default domain; application
credential by id and by name; token and v3token) run a whole sync; a plugin it cannot serve
(v3totp) is shown to reach keystone as keystoneauth1 built it. An expired token is replaced once; a new
token keystone refuses fails the listings that asked for it, not the run's other types.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from anyio.abc import TaskStatus
from quart import Quart, request
from reconcile_support import T0, Harness, minutes, open_harness
from test_sync_failures import world_with_everything

from tally.openstack import resolve_cloud
from tally.openstack._keystone import authenticate, listing_client
from tally.openstack._listing import get_json
from tally.reconcile import Status
from tally.simulation import serve_fake_cloud
from tally.simulator.fakecloud import (
    ADMIN_PASSWORD,
    ADMIN_PROJECT,
    ADMIN_USER,
    FakeCloudState,
)
from tally.store import Store

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)]


async def admin_token(h: Harness) -> str:
    body = {
        "auth": {
            "identity": {
                "methods": ["password"],
                "password": {
                    "user": {"name": ADMIN_USER, "password": ADMIN_PASSWORD, "domain": {"name": "Default"}}
                },
            }
        }
    }
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{h.base_url}/v3/auth/tokens", json=body)
    assert response.status_code == 201, response.text
    return response.headers["X-Subject-Token"]


def entries(h: Harness, token: str) -> dict[str, dict[str, Any]]:
    auth_url = f"{h.base_url}/v3"
    unrestricted = h.state.accounts.credential("unrestricted")
    return {
        "password-default-domain": {
            "auth_type": "password",
            "auth": {
                "auth_url": auth_url,
                "username": ADMIN_USER,
                "password": ADMIN_PASSWORD,
                "project_name": ADMIN_PROJECT,
                "default_domain_name": "Default",
            },
        },
        "v3password": {
            "auth_type": "v3password",
            "auth": {
                "auth_url": auth_url,
                "username": ADMIN_USER,
                "password": ADMIN_PASSWORD,
                "project_name": ADMIN_PROJECT,
                "user_domain_id": "default",
                "project_domain_name": "Default",
            },
        },
        "appcred-by-id": {
            "auth_type": "v3applicationcredential",
            "auth": {
                "auth_url": auth_url,
                "application_credential_id": unrestricted.id,
                "application_credential_secret": unrestricted.secret,
            },
        },
        "appcred-by-name": {
            "auth_type": "v3applicationcredential",
            "auth": {
                "auth_url": auth_url,
                "application_credential_name": unrestricted.name,
                "application_credential_secret": unrestricted.secret,
                "username": ADMIN_USER,
                "user_domain_name": "Default",
            },
        },
        "token": {
            "auth_type": "token",
            "auth": {
                "auth_url": auth_url,
                "token": token,
                "project_name": ADMIN_PROJECT,
                "project_domain_name": "Default",
            },
        },
        "v3token": {
            "auth_type": "v3token",
            "auth": {"auth_url": auth_url, "token": token, "project_id": h.state.accounts.admin.project_id},
        },
    }


@pytest.mark.parametrize(
    "os_cloud",
    ["password-default-domain", "v3password", "appcred-by-id", "appcred-by-name", "token", "v3token"],
)
async def test_a_plugin_the_fake_serves_runs_a_whole_sync(
    store: Store, tmp_path: Path, os_cloud: str
) -> None:
    async with open_harness(world_with_everything()[0], store, tmp_path) as h:
        h.at(T0 + minutes(60))
        h.add_clouds_yaml_entry(os_cloud, entries(h, await admin_token(h))[os_cloud])
        outcome = await h.sync(T0 + minutes(60), entry=h.entry_for(os_cloud))
        assert outcome.status is Status.COMPLETED, (await h.run_row(outcome))["stats"]["errors"]
        assert outcome.stats["created"] == 4


async def test_a_plugin_the_fake_cannot_serve_reaches_keystone_as_keystoneauth_built_it(
    store: Store, tmp_path: Path
) -> None:
    async with open_harness(world_with_everything()[0], store, tmp_path) as h:
        h.add_clouds_yaml_entry(
            "totp",
            {
                "auth_type": "v3totp",
                "auth": {
                    "auth_url": f"{h.base_url}/v3",
                    "username": ADMIN_USER,
                    "passcode": "123456",
                    "user_domain_name": "Default",
                    "project_name": ADMIN_PROJECT,
                    "project_domain_name": "Default",
                },
            },
        )
        outcome = await h.sync(T0 + minutes(60), entry=h.entry_for("totp"))
        assert outcome.status is Status.FAILED
        assert (await h.run_row(outcome))["stats"]["errors"] == [
            'authenticating against the cloud "totp": '
            "The request you have made requires authentication. (HTTP 401)"
        ]


async def test_a_token_refused_with_401_is_replaced_once(store: Store, tmp_path: Path) -> None:
    async with open_harness(world_with_everything()[0], store, tmp_path) as h:
        h.at(T0 + minutes(60))
        grant = await authenticate(resolve_cloud("admin"))
        first = grant.token
        h.state.accounts.tokens.clear()  # every token keystone issued is now expired
        bodies: list[Any] = []

        async def listing(client: httpx.AsyncClient) -> None:
            url = grant.endpoint("compute") + "/servers/detail"
            bodies.append(await get_json(client, url, {"all_tenants": "1"}))

        async with listing_client(grant) as client, anyio.create_task_group() as tg:
            for _ in range(5):  # the listings of a run, refused the same token at once
                tg.start_soon(listing, client)
        assert [len(body["servers"]) for body in bodies] == [1] * 5
        assert grant.token != first
        assert list(h.state.accounts.tokens) == [grant.token]  # one new token, not one per request


def serve_expiring_at(
    first: Callable[[str], bool],
) -> Callable[..., Awaitable[None]]:
    """The fake served as usual, but the first request whose path ``first`` picks finds every token
    expired and keystone down: its 401 asks for a new token, and keystone refuses it."""

    def serve(
        app: Quart, host: str, port: int, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED
    ) -> Awaitable[None]:
        state: FakeCloudState = app.config["FAKE_CLOUD"]

        @app.before_request
        async def expire() -> None:
            if first(request.path) and "identity" not in state.faults.down:
                state.accounts.tokens.clear()
                state.faults.down.add("identity")

        return serve_fake_cloud(app, host, port, task_status=task_status)

    return serve


REFUSAL = 'authenticating against the cloud "admin": Service Unavailable (HTTP 503)'


async def test_a_new_token_keystone_refuses_mid_run_fails_the_listings_that_asked(
    store: Store, tmp_path: Path
) -> None:
    serve = serve_expiring_at(lambda path: path.startswith("/image/"))
    async with open_harness(world_with_everything()[0], store, tmp_path, serve=serve) as h:
        outcome = await h.sync(T0 + minutes(60))
        assert outcome.status is Status.FAILED
        errors = (await h.run_row(outcome))["stats"]["errors"]
        assert f"enumerating image: {REFUSAL}" in errors, errors
        # Each listing refused its token says so in the seed's words, and so does the size-name listing's
        # own token request; the listings that had ended keep their types.
        listings = ("server", "volume", "floating_ip", "image")
        assert all(
            e in {f"enumerating {name}: {REFUSAL}" for name in listings}
            or e == f"listing the size names of {h.cloud}: listing the volume types: {REFUSAL}"
            for e in errors
        ), errors
        assert "image" not in outcome.stats["complete_types"]


async def test_a_new_token_keystone_refuses_for_the_volume_types_fails_the_size_names_only(
    store: Store, tmp_path: Path
) -> None:
    serve = serve_expiring_at(lambda path: path.endswith("/types"))
    async with open_harness(world_with_everything()[0], store, tmp_path, serve=serve) as h:
        outcome = await h.sync(T0 + minutes(60))
        errors = (await h.run_row(outcome))["stats"]["errors"]
        assert errors == [f"listing the size names of {h.cloud}: listing the volume types: {REFUSAL}"]
        assert outcome.stats["created"] == 4  # every type observed and booked
