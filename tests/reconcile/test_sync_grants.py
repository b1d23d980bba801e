"""A cloud's grant kept across runs, end to end against the fake cloud over real HTTP.

The token and catalog of one run serve the next until the token is due, keystone's version document is
read once, nova's once per catalog, a token refused with 401 is replaced once, a token near its expiry
is renewed, and a change of clouds.yaml is read at the next run. Inside ``kept_connections`` runs
share their connections, or send their listings through the scope's transport when it names one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import anyio
import httpx
import pytest
import yaml
from anyio.abc import TaskStatus
from quart import Quart, request
from reconcile_support import T0, Harness, minutes, open_harness
from test_sync_failures import world_with_everything

from tally.openstack import kept_connections
from tally.reconcile import Status
from tally.simulation import serve_fake_cloud
from tally.simulator.fakecloud import _keystone as fake_keystone
from tally.store import Store

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)]

TOKEN_POST = ("POST", "/v3/auth/tokens")
DISCOVERY = ("GET", "/v3")
NOVA_VERSION = ("GET", "/compute/v2.1")


@asynccontextmanager
async def counted(store: Store, tmp_path: Path) -> AsyncIterator[tuple[Harness, Counter[tuple[str, str]]]]:
    """A harness whose fake cloud counts the requests it was sent, by method and path."""
    sent: Counter[tuple[str, str]] = Counter()

    def serve(
        app: Quart, host: str, port: int, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED
    ) -> Awaitable[None]:
        @app.before_request
        async def count() -> None:
            sent[(request.method, request.path.rstrip("/"))] += 1

        return serve_fake_cloud(app, host, port, task_status=task_status)

    async with open_harness(world_with_everything()[0], store, tmp_path, serve=serve) as h:
        yield h, sent


async def completed(h: Harness, at_minutes: float) -> None:
    outcome = await h.sync(T0 + minutes(at_minutes))
    assert outcome.status is Status.COMPLETED, (await h.run_row(outcome))["stats"]["errors"]


async def test_the_token_and_catalog_of_a_run_serve_the_next(store: Store, tmp_path: Path) -> None:
    async with counted(store, tmp_path) as (h, sent):
        for at in (60, 120, 180):
            await completed(h, at)
        # One token for three runs and their size names, keystone's version document read once.
        assert sent[TOKEN_POST] == 1
        assert sent[DISCOVERY] == 1
        assert sent[NOVA_VERSION] == 1  # the microversion negotiated once for the three runs
        assert len(h.state.accounts.tokens) == 1
        assert sent[("GET", "/compute/v2.1/servers/detail")] >= 3 * 2  # every run still listed


async def test_a_token_near_its_expiry_is_renewed_before_a_run(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # keystoneauth1 renews a token that expires within two minutes: one that lives 90 s is always due.
    monkeypatch.setattr(fake_keystone, "TOKEN_LIFETIME", timedelta(seconds=90))
    async with counted(store, tmp_path) as (h, sent):
        await completed(h, 60)
        first = set(h.state.accounts.tokens)
        await completed(h, 120)
        # A token always due is asked for at each use, as before grants were kept: the listings' and
        # the size names', in each run.
        assert sent[TOKEN_POST] == 4
        assert set(h.state.accounts.tokens) - first  # the second run used a new token
        assert sent[DISCOVERY] == 1  # discovery is not redone for a renewal
        assert sent[NOVA_VERSION] == 2  # a new catalog: nova's microversion negotiated again


async def test_a_kept_token_refused_with_401_is_replaced_once(store: Store, tmp_path: Path) -> None:
    async with counted(store, tmp_path) as (h, sent):
        await completed(h, 60)
        first = set(h.state.accounts.tokens)
        h.state.accounts.tokens.clear()  # keystone forgot it (revoked, restarted): every listing gets 401
        await completed(h, 120)
        assert sent[TOKEN_POST] == 2  # one new token for all the listings refused at once
        assert len(h.state.accounts.tokens) == 1
        assert not set(h.state.accounts.tokens) & first
        await completed(h, 180)
        assert sent[TOKEN_POST] == 2  # and the new one is kept in turn


async def test_a_change_of_clouds_yaml_is_read_at_the_next_run(store: Store, tmp_path: Path) -> None:
    async with counted(store, tmp_path) as (h, sent):
        await completed(h, 60)
        # The same entry rewritten with the same content: nothing to read again, the token is kept.
        h.clouds_yaml.write_text(h.clouds_yaml.read_text())
        await completed(h, 120)
        assert sent[TOKEN_POST] == 1
        # The password changed in the file (and at once, within the file's mtime tick): the next run
        # resolves the entry again and authenticates with what it says now.
        doc = yaml.safe_load(h.clouds_yaml.read_text())
        doc["clouds"]["admin"]["auth"]["password"] = "not-the-password"
        h.clouds_yaml.write_text(yaml.safe_dump(doc))
        outcome = await h.sync(T0 + minutes(180))
        assert outcome.status is Status.FAILED
        assert sent[TOKEN_POST] == 2
        errors = (await h.run_row(outcome))["stats"]["errors"]
        assert errors[0].startswith('authenticating against the cloud "admin": '), errors
        assert "(HTTP 401)" in errors[0], errors


@asynccontextmanager
async def by_connection(store: Store, tmp_path: Path) -> AsyncIterator[tuple[Harness, list[set[int]]]]:
    """A harness whose fake cloud notes the client port (the connection) of each request, per run."""
    ports: list[set[int]] = [set()]

    def serve(
        app: Quart, host: str, port: int, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED
    ) -> Awaitable[None]:
        @app.before_request
        async def note() -> None:
            client = request.scope.get("client")
            assert client is not None
            ports[-1].add(int(client[1]))

        return serve_fake_cloud(app, host, port, task_status=task_status)

    async with open_harness(world_with_everything()[0], store, tmp_path, serve=serve) as h:
        yield h, ports


async def test_runs_inside_kept_connections_send_on_the_connections_of_the_run_before(
    store: Store, tmp_path: Path
) -> None:
    async with by_connection(store, tmp_path) as (h, ports):
        await completed(h, 60)
        ports.append(set())
        await completed(h, 120)
        assert not ports[0] & ports[1]  # outside the scope each run opens its own
        ports.append(set())
        async with kept_connections():
            await completed(h, 180)
            ports.append(set())
            await completed(h, 240)
        assert ports[3] <= ports[2], ports[2:]
        ports.append(set())
        await completed(h, 300)
        assert not ports[4] & (ports[2] | ports[3])  # closed when the scope ended


async def test_runs_inside_kept_connections_with_a_transport_send_their_listings_through_it(
    store: Store, tmp_path: Path
) -> None:
    apps: list[Quart] = []
    sent: list[tuple[str, int]] = []  # (path, client port) of every request the fake cloud answered

    def serve(
        app: Quart, host: str, port: int, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED
    ) -> Awaitable[None]:
        apps.append(app)

        @app.before_request
        async def note() -> None:
            client = request.scope.get("client")
            assert client is not None
            sent.append((request.path, int(client[1])))

        return serve_fake_cloud(app, host, port, task_status=task_status)

    async with open_harness(world_with_everything()[0], store, tmp_path, serve=serve) as h:
        # A client port no socket has: what the in-process transport names its caller.
        in_process = httpx.ASGITransport(app=apps[0], client=("127.0.0.1", 7))
        async with kept_connections(in_process):
            await completed(h, 60)
            await completed(h, 120)
        listings = [port for path, port in sent if not path.startswith("/v3")]
        assert len(listings) >= 2 * 5 and set(listings) == {7}
        assert {port for path, port in sent if path.startswith("/v3")} - {7}  # keystone: the socket
        sent.clear()
        await completed(h, 180)  # outside the scope: the socket again
        assert sent and 7 not in {port for _, port in sent}
