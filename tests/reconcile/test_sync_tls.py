"""TLS from clouds.yaml, end to end: the fake cloud behind HTTPS that demands a client certificate.

keystone and every listing go through the same trust (``cacert`` with ``~``, ``insecure``, or
``REQUESTS_CA_BUNDLE`` when the entry names no CA) and present the entry's ``cert``/``key``.
"""

from __future__ import annotations

import socket
import ssl
from pathlib import Path
from typing import Any

import anyio
import pytest
import trustme
from anyio.abc import TaskStatus
from hypercorn.asyncio import serve
from hypercorn.config import Config
from quart import Quart
from reconcile_support import T0, Harness, builder, minutes, open_harness

from tally.reconcile import Status
from tally.simulator.fakecloud import ADMIN_PASSWORD, ADMIN_PROJECT, ADMIN_USER
from tally.store import Store

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME holding the CA, the server's certificate and a client certificate the server trusts."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(home / "ca.pem"))
    server = ca.issue_cert("127.0.0.1")
    server.private_key_and_cert_chain_pem.write_to_path(str(home / "server.pem"))
    client = ca.issue_cert("tally@example")
    client.cert_chain_pems[0].write_to_path(str(home / "client.pem"))
    client.private_key_pem.write_to_path(str(home / "client.key"))
    return home


def tls_server(home: Path) -> Any:
    async def serve_tls(
        app: Quart, host: str, port: int, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        sock = socket.socket()
        sock.bind((host, port))
        sock.listen()
        bound = sock.getsockname()[1]
        config = Config()
        config.bind = [f"fd://{sock.detach()}"]  # hypercorn owns the socket from here, and closes it
        config.certfile = config.keyfile = str(home / "server.pem")
        config.ca_certs = str(home / "ca.pem")
        config.verify_mode = ssl.CERT_REQUIRED
        config.graceful_timeout = 0.1
        config.accesslog = None
        stop = anyio.Event()

        async def run() -> None:
            # Shielded, stopped by its shutdown trigger: hypercorn does not take a cancellation mid-serve.
            with anyio.CancelScope(shield=True):
                await serve(app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            task_status.started(bound)
            try:
                await anyio.sleep_forever()
            finally:
                stop.set()

    return serve_tls


def world():  # type: ignore[no-untyped-def]
    b = builder()
    p = b.project("alpha")
    vt = b.volume_type("ssd")
    b.volume(p, vt, size_gb=5, created_at=T0 + minutes(2))
    b.image(p, size_bytes=2**30, created_at=T0 + minutes(4))
    return b.build()


def add_entry(h: Harness, name: str, **tls: Any) -> None:
    auth = {
        "auth_url": f"{h.base_url}/v3",
        "username": ADMIN_USER,
        "password": ADMIN_PASSWORD,
        "project_name": ADMIN_PROJECT,
        "default_domain_name": "Default",
    }
    h.add_clouds_yaml_entry(name, {"auth_type": "password", "auth": auth, **tls})


CLIENT = {"cert": "~/client.pem", "key": "~/client.key"}


@pytest.mark.parametrize(
    ("tls", "bundle"),
    [
        pytest.param({"cacert": "~/ca.pem", **CLIENT}, False, id="cacert with ~"),
        pytest.param({"insecure": True, **CLIENT}, False, id="insecure"),
        pytest.param(CLIENT, True, id="REQUESTS_CA_BUNDLE"),
    ],
)
async def test_keystone_and_the_listings_share_the_entry_tls(
    store: Store,
    tmp_path: Path,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    tls: dict[str, Any],
    bundle: bool,
) -> None:
    if bundle:
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(home / "ca.pem"))
    async with open_harness(world(), store, tmp_path, serve=tls_server(home), scheme="https") as h:
        add_entry(h, "tls", **tls)
        outcome = await h.sync(T0 + minutes(60), entry=h.entry_for("tls"))
        assert outcome.status is Status.COMPLETED, (await h.run_row(outcome))["stats"]["errors"]
        assert outcome.stats["created"] == 2


async def test_without_the_client_certificate_keystone_is_not_reached(
    store: Store, tmp_path: Path, home: Path
) -> None:
    async with open_harness(world(), store, tmp_path, serve=tls_server(home), scheme="https") as h:
        add_entry(h, "no-cert", cacert="~/ca.pem")
        outcome = await h.sync(T0 + minutes(60), entry=h.entry_for("no-cert"))
        assert outcome.status is Status.FAILED
        (error,) = (await h.run_row(outcome))["stats"]["errors"]
        assert error.startswith('authenticating against the cloud "no-cert": ') and "\n" not in error
