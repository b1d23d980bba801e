"""Keystone: one token request and the catalog it answers, through keystoneauth1.

keystoneauth1 is blocking (requests), so the token request runs in a worker
thread; a run cancelled by its budget abandons the thread rather than waiting
for it. Only the v3 plugins are used, named explicitly, so the one request sent
is ``POST {auth_url}/auth/tokens``: no version discovery GET that an access rule
would have to allow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading, session

from tally.reconcile import RunAborted

from ._clouds_yaml import ResolvedCloud

PASSWORD_TYPES = frozenset({"password", "v3password"})
APP_CREDENTIAL_TYPES = frozenset({"v3applicationcredential", "applicationcredential"})

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


@dataclass(frozen=True, slots=True)
class Grant:
    """A token and the catalog it came with."""

    token: str
    project_id: str
    catalog: Any  # keystoneauth1.access.service_catalog.ServiceCatalogV3
    interface: str
    region_name: str | None
    verify: bool | str

    def endpoint(self, service: str) -> str:
        """The catalog URL of ``service`` for the entry's interface and region."""
        for service_type in SERVICE_TYPES.get(service, (service,)):
            try:
                url = self.catalog.url_for(
                    service_type=service_type, interface=self.interface, region_name=self.region_name
                )
            except ks_exceptions.EndpointNotFound:
                continue
            if url:
                return str(url).rstrip("/")
        raise EndpointMissing(f"the catalog lists no {self.interface} endpoint of type {service}")


def _plugin(cloud: ResolvedCloud) -> Any:
    auth_type = cloud.auth_type.lower()
    refused = f'authenticating against the cloud "{cloud.entry}"'
    options = {k: v for k, v in cloud.auth.items() if v not in (None, "")}
    if auth_type in APP_CREDENTIAL_TYPES:
        if not options.get("application_credential_secret"):
            raise RunAborted(f"{refused}: You must provide an Application Credential Secret")
        name = "v3applicationcredential"
    elif auth_type in PASSWORD_TYPES:
        name = "v3password"
    else:
        raise RunAborted(
            f"{refused}: auth_type {cloud.auth_type!r} is not supported (password or v3applicationcredential)"
        )
    try:
        loader: Any = loading.get_plugin_loader(name)
        known = {o.dest for o in loader.get_options()}
        return loader.load_from_options(**{k: v for k, v in options.items() if k in known})
    except ks_exceptions.ClientException as exc:
        raise RunAborted(f'authenticating against the cloud "{cloud.entry}": {exc}') from exc


def _authenticate_blocking(cloud: ResolvedCloud) -> Grant:
    plugin = _plugin(cloud)
    sess = session.Session(auth=plugin, verify=cloud.verify)
    try:
        access = plugin.get_access(sess)
    except ks_exceptions.ClientException as exc:
        raise RunAborted(
            f'authenticating against the cloud "{cloud.entry}": {_keystone_reason(exc)}'
        ) from exc
    finally:
        sess.session.close()
    return Grant(
        token=str(access.auth_token),
        project_id=str(access.project_id or ""),
        catalog=access.service_catalog,
        interface=cloud.interface,
        region_name=cloud.region_name,
        verify=cloud.verify,
    )


def _keystone_reason(exc: ks_exceptions.ClientException) -> str:
    # keystoneauth appends "(HTTP 401) (Request-ID: ...)" to keystone's own message; keep keystone's words.
    message = getattr(exc, "message", None) or str(exc)
    status = getattr(exc, "http_status", None)
    return f"{message} (HTTP {status})" if status and f"HTTP {status}" not in message else str(message)


async def authenticate(cloud: ResolvedCloud) -> Grant:
    """Request a token for ``cloud``; a refusal raises ``RunAborted`` worded as the seed words it."""
    return await anyio.to_thread.run_sync(_authenticate_blocking, cloud, abandon_on_cancel=True)
