"""The clouds.yaml features the ``openstack`` client honours, one row each, as the session sees them.

Every row is resolved by Tally's rules (seed 000) and handed to openstacksdk/keystoneauth1, as a
run does, up to the session: the auth plugin keystoneauth1 loaded, the TLS trust and client
certificate, the endpoints (overrides, else the token's catalog for the region and interface), the
region and interface, or the one-line refusal. Nothing here talks to a cloud:
``tests/reconcile/test_sync_auth.py`` does, for the plugins the fake serves.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trustme
import yaml
from keystoneauth1 import access, loading

from tally.openstack import resolve_cloud
from tally.openstack._keystone import Grant, build_session
from tally.openstack._tls import ca_file
from tally.reconcile import RunAborted

AUTH_URL = "https://keystone.example/v3"
PASSWORD = {"auth_url": AUTH_URL, "username": "u", "password": "p", "project_name": "admin"}
DOMAINS = {"user_domain_name": "Default", "project_domain_name": "Default"}
OIDC = {"auth_url": AUTH_URL, "identity_provider": "idp", "protocol": "openid", "project_id": "p1"}


@dataclass(frozen=True)
class Row:
    """One clouds.yaml variant and what the session made of it must show."""

    name: str
    entry: Mapping[str, Any]
    plugin: str | None = None  # the keystoneauth1 loader name whose plugin class must be the session's auth
    verify: object = True  # True, False, or a path relative to HOME
    cert: object = None
    endpoints: Mapping[str, str | None] = field(default_factory=dict)
    interfaces: Mapping[str, str] = field(default_factory=dict)
    region: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    public: Mapping[str, Any] | None = None  # clouds-public.yaml beside the file
    secure: Mapping[str, Any] | None = None  # secure.yaml beside the file
    refused: str | None = None


def password(**extra: Any) -> dict[str, Any]:
    return {"auth_type": "password", "auth": {**PASSWORD, **DOMAINS}, **extra}


ROWS = (
    Row("password", password(), plugin="password"),
    Row("v3password", {"auth_type": "v3password", "auth": {**PASSWORD, **DOMAINS}}, plugin="v3password"),
    Row("no auth_type is password", {"auth": {**PASSWORD, **DOMAINS}}, plugin="password"),
    Row(
        "default_domain_name",
        {"auth_type": "password", "auth": {**PASSWORD, "default_domain_name": "Default"}},
        plugin="password",
    ),
    Row(
        "default_domain_id",
        {"auth_type": "password", "auth": {**PASSWORD, "default_domain_id": "default"}},
        plugin="password",
    ),
    Row(
        "user_domain_id and project_id",
        {
            "auth_type": "v3password",
            "auth": {
                "auth_url": AUTH_URL,
                "username": "u",
                "password": "p",
                "user_domain_id": "default",
                "project_id": "p1",
            },
        },
        plugin="v3password",
    ),
    Row(
        "application credential by id",
        {
            "auth_type": "v3applicationcredential",
            "auth": {
                "auth_url": AUTH_URL,
                "application_credential_id": "a1",
                "application_credential_secret": "s",
            },
        },
        plugin="v3applicationcredential",
    ),
    Row(
        "application credential by name",
        {
            "auth_type": "v3applicationcredential",
            "auth": {
                "auth_url": AUTH_URL,
                "application_credential_name": "n",
                "application_credential_secret": "s",
                "username": "u",
                "user_domain_name": "Default",
            },
        },
        plugin="v3applicationcredential",
    ),
    Row(
        "application credential secret in secure.yaml",
        {
            "auth_type": "v3applicationcredential",
            "auth": {"auth_url": AUTH_URL, "application_credential_id": "a1"},
        },
        plugin="v3applicationcredential",
        secure={"auth": {"application_credential_secret": "s"}},
    ),
    Row(
        "token",
        {"auth_type": "token", "auth": {"auth_url": AUTH_URL, "token": "t", "project_id": "p1"}},
        plugin="token",
    ),
    Row(
        "v3token",
        {"auth_type": "v3token", "auth": {"auth_url": AUTH_URL, "token": "t", "project_id": "p1"}},
        plugin="v3token",
    ),
    Row(
        "v3oidcpassword",
        {
            "auth_type": "v3oidcpassword",
            "auth": {
                **OIDC,
                "client_id": "c",
                "client_secret": "cs",
                "username": "u",
                "password": "p",
                "discovery_endpoint": "https://idp/.well-known",
            },
        },
        plugin="v3oidcpassword",
    ),
    Row(
        "v3oidcclientcredentials",
        {
            "auth_type": "v3oidcclientcredentials",
            "auth": {
                **OIDC,
                "client_id": "c",
                "client_secret": "cs",
                "access_token_endpoint": "https://idp/token",
            },
        },
        plugin="v3oidcclientcredentials",
    ),
    Row(
        "v3oidcaccesstoken",
        {"auth_type": "v3oidcaccesstoken", "auth": {**OIDC, "access_token": "at"}},
        plugin="v3oidcaccesstoken",
    ),
    Row(
        "v3oidcauthcode",
        {
            "auth_type": "v3oidcauthcode",
            "auth": {
                **OIDC,
                "client_id": "c",
                "client_secret": "cs",
                "code": "x",
                "redirect_uri": "https://r",
                "access_token_endpoint": "https://t",
            },
        },
        plugin="v3oidcauthcode",
    ),
    Row(
        "v3totp",
        {
            "auth_type": "v3totp",
            "auth": {
                "auth_url": AUTH_URL,
                "username": "u",
                "passcode": "123456",
                "project_id": "p1",
                "user_domain_id": "default",
            },
        },
        plugin="v3totp",
    ),
    Row(
        "v3multifactor",
        {
            "auth_type": "v3multifactor",
            "auth": {
                "auth_url": AUTH_URL,
                "auth_methods": ["v3password", "v3totp"],
                "username": "u",
                "password": "p",
                "passcode": "123456",
                "user_domain_id": "default",
                "project_id": "p1",
            },
        },
        plugin="v3multifactor",
    ),
    Row(
        "admin_token with compute override",
        {
            "auth_type": "admin_token",
            "auth": {"endpoint": "https://k/", "token": "t"},
            "compute_endpoint_override": "https://nova/v2.1",
        },
        plugin="admin_token",
        endpoints={"compute": "https://nova/v2.1"},
    ),
    Row(
        "none auth: endpoint for every service",
        {"auth_type": "none", "auth": {"endpoint": "https://all/"}},
        plugin="none",
        endpoints={"compute": "https://all", "image": "https://all"},
    ),
    Row(
        "profile from clouds-public.yaml",
        {
            "profile": "private-cloud",
            "auth": {"username": "u", "password": "p", "project_name": "admin", **DOMAINS},
        },
        plugin="password",
        region="RegionP",
        public={"private-cloud": {"auth": {"auth_url": AUTH_URL}, "region_name": "RegionP"}},
    ),
    Row("insecure: true", password(insecure=True), verify=False),
    Row("verify: false", password(verify=False), verify=False),
    Row("cacert absolute", password(cacert="{home}/ca.pem"), verify="ca.pem"),
    Row("cacert with ~", password(cacert="~/ca.pem"), verify="ca.pem"),
    Row("insecure beats cacert", password(insecure=True, cacert="~/ca.pem"), verify=False),
    Row(
        "REQUESTS_CA_BUNDLE when verify is true",
        password(),
        verify="bundle.pem",
        env={"REQUESTS_CA_BUNDLE": "{home}/bundle.pem"},
    ),
    Row(
        "cacert beats REQUESTS_CA_BUNDLE",
        password(cacert="~/ca.pem"),
        verify="ca.pem",
        env={"REQUESTS_CA_BUNDLE": "{home}/bundle.pem"},
    ),
    Row("cert and key", password(cert="~/client.pem", key="~/client.key"), cert=("client.pem", "client.key")),
    Row("cert alone (key inside)", password(cert="~/combined.pem"), cert="combined.pem"),
    Row(
        "compute_endpoint_override",
        password(compute_endpoint_override="https://nova.internal/v2.1"),
        endpoints={"compute": "https://nova.internal/v2.1", "image": None},
    ),
    Row(
        "block_storage_endpoint_override",
        password(block_storage_endpoint_override="https://cinder/v3/p1"),
        endpoints={"block-storage": "https://cinder/v3/p1"},
    ),
    Row(
        "network, image and load-balancer overrides",
        password(
            network_endpoint_override="https://neutron",
            image_endpoint_override="https://glance",
            load_balancer_endpoint_override="https://octavia",
        ),
        endpoints={
            "network": "https://neutron",
            "image": "https://glance",
            "load-balancer": "https://octavia",
        },
    ),
    Row("region_name", password(region_name="RegionTwo"), region="RegionTwo"),
    Row(
        "OS_REGION_NAME over regions",
        password(regions=["RegionOne", "RegionTwo"], region_name="RegionOne"),
        region="RegionTwo",
        env={"OS_REGION_NAME": "RegionTwo"},
    ),
    Row(
        "interface internal",
        password(interface="internal"),
        interfaces={"compute": "internal", "image": "internal"},
    ),
    Row(
        "OS_INTERFACE",
        password(interface="public"),
        interfaces={"compute": "admin"},
        env={"OS_INTERFACE": "admin"},
    ),
    Row(
        "per-service interface",
        password(compute_interface="internal"),
        interfaces={"compute": "internal", "image": "public"},
    ),
    # What the client refuses, the adapter refuses in its one line.
    Row(
        "no auth_url",
        {"auth_type": "password", "auth": {"username": "u", "password": "p"}},
        refused="Auth plugin requires parameters which were not given: auth_url",
    ),
    Row(
        "unknown auth_type",
        {"auth_type": "v3bogus", "auth": {"auth_url": AUTH_URL}},
        refused="The plugin v3bogus could not be found",
    ),
    Row(
        "no password",
        {"auth_type": "password", "auth": {"auth_url": AUTH_URL, "username": "u"}},
        refused="You must provide a password to authenticate",
    ),
    Row(
        "no application credential secret",
        {
            "auth_type": "v3applicationcredential",
            "auth": {"auth_url": AUTH_URL, "application_credential_id": "a"},
        },
        refused="You must provide an Application Credential Secret",
    ),
    # Options a plugin's loader does not mark required, yet its __init__ cannot go without: keystoneauth1's
    # words for a missing option, not Python's TypeError ("Token.__init__() missing 1 required ...").
    Row(
        "token without its token",
        {"auth_type": "token", "auth": {"auth_url": AUTH_URL, "project_id": "p1"}},
        refused="Auth plugin requires parameters which were not given: token",
    ),
    Row(
        "v3totp without its passcode",
        {"auth_type": "v3totp", "auth": {"auth_url": AUTH_URL, "username": "u", "user_domain_id": "default"}},
        refused="Auth plugin requires parameters which were not given: passcode",
    ),
    Row(
        "username without its domain",
        {"auth_type": "v3password", "auth": PASSWORD},
        refused="you must also provide either a user_domain_id or user_domain_name",
    ),
    Row(
        "unreadable cacert",
        password(cacert="~/missing.pem"),
        refused="the CA file {home}/missing.pem cannot be used",
    ),
    Row(
        "unreadable client certificate",
        password(cert="~/missing-client.pem"),
        refused="the client certificate {home}/missing-client.pem cannot be used",
    ),
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "OS_REGION_NAME", "OS_INTERFACE"):
        monkeypatch.delenv(name, raising=False)
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(home / "ca.pem"))
    ca.cert_pem.write_to_path(str(home / "bundle.pem"))
    client = ca.issue_cert("tally@example")
    client.cert_chain_pems[0].write_to_path(str(home / "client.pem"))
    client.private_key_pem.write_to_path(str(home / "client.key"))
    client.private_key_and_cert_chain_pem.write_to_path(str(home / "combined.pem"))
    return home


def _fill(value: Any, home: Path) -> Any:
    if isinstance(value, str):
        return value.replace("{home}", str(home))
    if isinstance(value, Mapping):
        return {k: _fill(v, home) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, home) for v in value]
    return value


def plugin_state(value: object) -> object:
    """A plugin's attributes, recursively (its auth methods' too), without its per-object lock."""
    if isinstance(value, list | tuple):
        return [plugin_state(v) for v in value]
    if isinstance(value, dict):
        return {k: plugin_state(v) for k, v in value.items()}
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return type(value), {k: plugin_state(v) for k, v in vars(value).items() if k != "_lock"}
    return value


def _open(row: Row, home: Path, monkeypatch: pytest.MonkeyPatch) -> Grant:
    directory = home / "etc"
    directory.mkdir()
    path = directory / "clouds.yaml"
    path.write_text(yaml.safe_dump({"clouds": {"c": _fill(row.entry, home)}}))
    if row.secure is not None:
        (directory / "secure.yaml").write_text(yaml.safe_dump({"clouds": {"c": row.secure}}))
    if row.public is not None:
        (directory / "clouds-public.yaml").write_text(yaml.safe_dump({"public-clouds": row.public}))
    env = {"OS_CLIENT_CONFIG_FILE": str(path), **_fill(row.env, home)}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    cloud = resolve_cloud("c", env=env)
    session, tls = build_session(cloud)
    return Grant(cloud, session, tls)


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_a_clouds_yaml_feature_reaches_the_session(
    row: Row, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if row.refused is not None:
        with pytest.raises(RunAborted) as caught:
            _open(row, home, monkeypatch)
        message = str(caught.value)
        assert message.startswith('authenticating against the cloud "c": '), message
        assert _fill(row.refused, home) in message
        assert "\n" not in message
        return
    grant = _open(row, home, monkeypatch)
    if row.plugin is not None:
        # The plugin keystoneauth1 loads for that auth_type is the very object the adapter authenticates with.
        assert type(grant.auth) is loading.get_plugin_loader(row.plugin).plugin_class
        assert grant.auth is grant.cloud.region.get_auth()
        if row.secure is None and row.public is None:
            # Handed unchanged: option for option the plugin keystoneauth1's own loader builds from the
            # entry's auth mapping as written (an option dropped or rewritten on the way shows here).
            direct = loading.get_plugin_loader(row.plugin).load_from_options(**_fill(row.entry["auth"], home))
            assert plugin_state(grant.auth) == plugin_state(direct)
    expected_verify = row.verify if isinstance(row.verify, bool) else str(home / str(row.verify))
    session_verify = grant.session.verify
    if expected_verify is False:
        assert session_verify is False
        assert grant.tls.verify_mode == ssl.CERT_NONE
    else:
        assert ca_file(True if session_verify is None else session_verify, dict(_fill(row.env, home))) == (
            expected_verify if isinstance(expected_verify, str) else ca_file(True, {})
        )
        assert grant.tls.verify_mode == ssl.CERT_REQUIRED
    if row.cert is None:
        assert grant.session.cert is None
    elif isinstance(row.cert, tuple):
        assert grant.session.cert == tuple(str(home / c) for c in row.cert)
    else:
        assert grant.session.cert == str(home / str(row.cert))
    for service, url in row.endpoints.items():
        if url is None:
            assert grant.cloud.region.get_endpoint(service) is None
        else:
            assert grant.endpoint(service) == url.rstrip("/")
    for service, interface in row.interfaces.items():
        assert grant.cloud.region.get_interface(service) == interface
    if row.region is not None:
        assert grant.cloud.region_name == row.region


def _catalog() -> Any:
    """A token's catalog as keystone sends it: each service in two regions at three interfaces."""
    services = ("compute", "image", "volumev3")
    catalog = [
        {
            "type": service,
            "endpoints": [
                {"interface": i, "region": r, "region_id": r, "url": f"https://{service}.{r}.{i}/"}
                for r in ("RegionOne", "RegionTwo")
                for i in ("public", "internal", "admin")
            ],
        }
        for service in services
    ]
    token = {
        "catalog": catalog,
        "project": {"id": "p1"},
        "methods": ["password"],
        "expires_at": "2099-01-01T00:00:00Z",
    }
    return access.create(body={"token": token}, auth_token="t").service_catalog


ENDPOINT_ROWS = (
    Row(
        "region_name",
        password(region_name="RegionTwo"),
        endpoints={"compute": "https://compute.RegionTwo.public"},
    ),
    Row(
        "interface",
        password(region_name="RegionOne", interface="internal"),
        endpoints={
            "compute": "https://compute.RegionOne.internal",
            "image": "https://image.RegionOne.internal",
        },
    ),
    Row(
        "per-service interface",
        password(region_name="RegionOne", compute_interface="admin"),
        endpoints={"compute": "https://compute.RegionOne.admin", "image": "https://image.RegionOne.public"},
    ),
    Row(
        "OS_REGION_NAME and OS_INTERFACE",
        password(regions=["RegionOne", "RegionTwo"], region_name="RegionOne"),
        endpoints={"compute": "https://compute.RegionTwo.internal"},
        env={"OS_REGION_NAME": "RegionTwo", "OS_INTERFACE": "internal"},
    ),
    Row(
        "cinder registered as volumev3",
        password(region_name="RegionTwo"),
        endpoints={"block-storage": "https://volumev3.RegionTwo.public"},
    ),
    Row(
        "an override beats the catalog",
        password(region_name="RegionTwo", image_endpoint_override="https://glance.internal/"),
        endpoints={"image": "https://glance.internal", "compute": "https://compute.RegionTwo.public"},
    ),
)


@pytest.mark.parametrize("row", ENDPOINT_ROWS, ids=[r.name for r in ENDPOINT_ROWS])
def test_a_listing_endpoint_is_the_catalogs_for_the_entry_region_and_interface(
    row: Row, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    grant = _open(row, home, monkeypatch)
    grant._catalog = _catalog()  # what keystone's token answer sets (``Grant.fetch``)
    for service, url in row.endpoints.items():
        assert grant.endpoint(service) == url
