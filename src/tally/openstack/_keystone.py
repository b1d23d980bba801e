"""Keystone through keystoneauth1: the session openstacksdk builds from the entry, its token and catalog.

The resolved entry's ``CloudRegion`` builds the keystoneauth1 session
(``get_session``) around the plugin keystoneauth1 loaded (``get_auth``), so every
plugin and clouds.yaml feature the ``openstack`` client honours is honoured here:
domains, profiles, ``insecure``/``cacert``/``cert``/``key``, region, interface and
``*_endpoint_override``. The listings take from it their token, their endpoints
and their TLS trust (``_tls``).

keystoneauth1 is blocking (requests): each call to it runs in a worker thread
bounded by what is left of the run's budget; a run cancelled by its budget
abandons the thread rather than waiting for it. A token refused later with a 401
(expired, revoked) is replaced once per token (``reauthenticate``); keystone's
refusal of the new one is ``RunAborted`` out of the request, which the listing
that sent it reports as its own failure.

A grant outlives its run (``_grants`` keeps it): ``ensure`` reuses the token and catalog
until keystoneauth1 would judge them near expiry, as every OpenStack client does, and the
endpoints looked up in the catalog are kept until the catalog changes.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncGenerator
from typing import Any

import anyio
import httpx
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1.identity import base as ks_identity
from keystoneauth1.session import Session

from ._clouds_yaml import ResolvedCloud
from ._listing import CONNECT_TIMEOUT_S, budget_left_s
from ._tls import tls_context

# Cinder registers under two types on many deployments (Kolla: block-storage and volumev3).
SERVICE_TYPES: dict[str, tuple[str, ...]] = {
    "compute": ("compute",),
    "block-storage": ("block-storage", "volumev3"),
    "network": ("network",),
    "image": ("image",),
    "load-balancer": ("load-balancer",),
}


class EndpointMissing(Exception):
    """The catalog lists no endpoint for a service: a failure of that service's types only."""


class Grant:
    """An authenticated session of one entry: its token, its endpoints, its TLS trust.

    The token changes only through ``reauthenticate``, once per refused token however many
    listings were refused it at the same time."""

    def __init__(self, cloud: ResolvedCloud, session: Session, tls: ssl.SSLContext) -> None:
        self.cloud = cloud
        self.session = session
        self.tls = tls
        self.auth: Any = session.auth
        self.token = ""
        self.project_id = ""
        self._catalog: Any = None
        # service -> URL, or None for a catalog without it; a catalog look-up costs milliseconds
        # (keystoneauth1 normalises a deep copy of the catalog on each), and a run makes six.
        self._endpoints: dict[str, str | None] = {}
        # compute URL -> the microversion negotiated from its version document, read once per catalog
        # like the endpoints: a run made that request each time for the same answer.
        self.microversions: dict[str, tuple[int, int] | None] = {}
        self._lock = anyio.Lock()

    def _fetch_blocking(self, timeout_s: float, *, fresh: bool) -> None:
        # requests takes (connect, read): keystone may answer as late as the budget allows, but a host
        # that does not accept the connection is down. keystoneauth1 passes the pair through unread.
        self.session.timeout = (min(CONNECT_TIMEOUT_S, timeout_s), timeout_s)  # type: ignore[assignment]
        if fresh:
            self.auth.invalidate()
        try:
            if isinstance(self.auth, ks_identity.BaseIdentityPlugin):
                access = self.auth.get_access(self.session)
                self.token = str(access.auth_token)
                self.project_id = str(access.project_id or "")
                if access.service_catalog is not self._catalog:
                    self._catalog = access.service_catalog
                    self._endpoints = {}
                    self.microversions = {}
            else:
                # A plugin that is no identity plugin (admin_token, none, http_basic) has no catalog:
                # the endpoints come from the *_endpoint_override settings.
                self.token = str(self.auth.get_token(self.session) or "")
        except ks_exceptions.HttpError as exc:
            raise self.cloud.refused(_keystone_reason(exc)) from exc
        except Exception as exc:
            # A plugin is third-party code: whatever it raises is its reason, in one line, never a traceback.
            raise self.cloud.refused(exc) from exc
        finally:
            # The session outlives the run but keystone is asked again only when the token is due:
            # a connection kept idle that long would only hold the server's end open.
            self.session.session.close()

    async def fetch(self, *, fresh: bool = False) -> None:
        timeout_s = budget_left_s()  # read here: the worker thread has no cancel scope to read it from
        await anyio.to_thread.run_sync(
            lambda: self._fetch_blocking(timeout_s, fresh=fresh), abandon_on_cancel=True
        )

    def _current(self) -> bool:
        """Whether the token in hand serves a run without asking keystone: keystoneauth1's own rule
        (its access is kept until it expires within ``MIN_TOKEN_LIFE_SECONDS``)."""
        if not self.token or not isinstance(self.auth, ks_identity.BaseIdentityPlugin):
            return False
        access = self.auth.auth_ref
        return access is not None and not access.will_expire_soon(self.auth.MIN_TOKEN_LIFE_SECONDS)

    async def ensure(self) -> None:
        """A token for a run: the one in hand while current, else keystoneauth1's (a new one when due)."""
        if not self._current():
            await self.fetch()

    async def reauthenticate(self, refused_token: str) -> None:
        """Replace ``refused_token`` (answered 401) with a new one, unless another listing already did."""
        async with self._lock:
            if self.token == refused_token:
                await self.fetch(fresh=True)

    def endpoint(self, service: str) -> str:
        """The URL of ``service``: its clouds.yaml endpoint override, else the catalog's for the
        service's interface and region."""
        if service not in self._endpoints:
            self._endpoints[service] = self._look_up(service)
        url = self._endpoints[service]
        if url is None:
            interface = self.cloud.region.get_interface(service) or "public"
            raise EndpointMissing(f"the catalog lists no {interface} endpoint of type {service}")
        return url

    def _look_up(self, service: str) -> str | None:
        region = self.cloud.region
        override = region.get_endpoint(service)
        if override:
            return str(override).rstrip("/")
        if self._catalog is None:
            return None
        interface = region.get_interface(service) or "public"
        for service_type in SERVICE_TYPES.get(service, (service,)):
            try:
                url = self._catalog.url_for(
                    service_type=service_type,
                    interface=interface,
                    region_name=region.get_region_name(service) or None,
                )
            except ks_exceptions.EndpointNotFound:
                continue
            if url:
                return str(url).rstrip("/")
        return None


def _keystone_reason(exc: ks_exceptions.HttpError) -> str:
    # keystoneauth appends "(HTTP 401) (Request-ID: ...)" to keystone's own message; keep keystone's words.
    message = exc.message or str(exc)
    status = exc.http_status
    return f"{message} (HTTP {status})" if status and f"HTTP {status}" not in message else str(message)


def build_session(cloud: ResolvedCloud) -> tuple[Session, ssl.SSLContext]:
    """The keystoneauth1 session of ``cloud`` and its TLS trust; blocking, raises ``RunAborted``."""
    try:
        session = cloud.region.get_session()
        return session, tls_context(True if session.verify is None else session.verify, session.cert)
    except Exception as exc:
        # TlsSettingsUnusable, or whatever openstacksdk raises for a session it cannot build.
        raise cloud.refused(exc) from exc


async def authenticate(cloud: ResolvedCloud) -> Grant:
    """A session of ``cloud`` with its token; a refusal raises ``RunAborted`` worded as the seed words it."""
    session, tls = await anyio.to_thread.run_sync(build_session, cloud, abandon_on_cancel=True)
    grant = Grant(cloud, session, tls)
    await grant.fetch()
    return grant


class KeystoneToken(httpx.Auth):
    """httpx auth of a listing: the grant's token, replaced once and the request sent again on a 401."""

    def __init__(self, grant: Grant) -> None:
        self._grant = grant

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        token = self._grant.token
        request.headers["X-Auth-Token"] = token
        response = yield request
        if response.status_code == 401:
            await self._grant.reauthenticate(token)
            request.headers["X-Auth-Token"] = self._grant.token
            yield request


def listing_client(
    grant: Grant, *, keepalive_s: float | None = None, transport: httpx.AsyncBaseTransport | None = None
) -> httpx.AsyncClient:
    """The httpx client of a run's listings: the grant's token and TLS trust (timeouts: per request);
    ``keepalive_s``: how long an idle connection may be reused (httpx's 5 s by default); ``transport``:
    what sends the requests instead of httpx's connection pool (a simulated cloud's app in-process)."""
    limits = httpx.Limits(
        # httpx's own pool sizes.
        max_connections=100,
        max_keepalive_connections=20,
        keepalive_expiry=5.0 if keepalive_s is None else keepalive_s,
    )
    return httpx.AsyncClient(
        auth=KeystoneToken(grant),
        verify=grant.tls,
        headers={"Accept": "application/json"},
        limits=limits,
        transport=transport,
    )
