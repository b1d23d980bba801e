"""``tally check-cloud``: seed 001's account check, automated.

It sends what a run sends and reads the answers an operator would: the token,
the admin-scope probe, the deleted-servers listing, one page of each listing
(does the account see beyond its own project?), and each of the eight requests
of a read-only credential (does a 401 say a rule is missing?). Every finding is
one line; any finding makes the command exit non-zero.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import anyio
import httpx

from tally.core import format_instant, utc_now
from tally.reconcile import AccountCheck, RunAborted

from ._clouds_yaml import resolve_cloud
from ._keystone import EndpointMissing, Grant, authenticate, listing_client
from ._listing import ListingFailed, get_json, request_timeout, under
from ._settings import OpenStackSettings


def _projects(items: list[Any], owner: Callable[[dict[str, Any]], object]) -> set[str]:
    return {str(owner(i)) for i in items if isinstance(i, dict) and owner(i)}


async def check_cloud(settings: OpenStackSettings) -> AccountCheck:
    """Run the account check of one clouds.yaml entry."""
    report = AccountCheck()
    try:
        cloud = await anyio.to_thread.run_sync(resolve_cloud, settings.os_cloud)
        grant = await authenticate(cloud)
    except RunAborted as exc:
        report.findings.append(f"token: {exc}")
        return report
    report.ok.append(f"token: issued for project {grant.project_id}")
    async with listing_client(grant) as client:
        try:
            await _probe_and_deleted(client, grant, settings, report)
            await _reach(client, grant, settings, report)
            await _rules(client, grant, settings, report)
        except RunAborted as exc:  # keystone refused the new token a 401 asked for
            report.findings.append(f"token: {exc}")
    return report


async def _probe_and_deleted(
    client: httpx.AsyncClient, grant: Grant, settings: OpenStackSettings, report: AccountCheck
) -> None:
    try:
        compute = grant.endpoint("compute")
        await get_json(client, compute + "/servers/detail", {"all_tenants": "1", "limit": "1"})
        report.ok.append("probe: nova lists servers across every project")
    except (EndpointMissing, ListingFailed) as exc:
        report.findings.append(
            f'probe: the clouds.yaml entry "{settings.os_cloud}" cannot observe the whole cloud: {exc}'
        )
        return
    since = format_instant(utc_now() - timedelta(hours=1))
    try:
        await get_json(
            client,
            compute + "/servers/detail",
            {"all_tenants": "1", "deleted": "true", "changes-since": since, "limit": "1"},
        )
        report.ok.append("deleted listing: nova answers deleted=true")
    except ListingFailed as exc:
        report.findings.append(f"deleted listing: {exc}")


# (service, path, the version segment the client inserts, the listing key, query, the owner of an item)
LISTINGS: tuple[tuple[str, str, str, str, dict[str, str], Callable[[dict[str, Any]], object]], ...] = (
    ("compute", "/servers/detail", "", "servers", {"all_tenants": "1"}, lambda d: d.get("tenant_id")),
    (
        "block-storage",
        "/volumes/detail",
        "",
        "volumes",
        {"all_tenants": "1"},
        lambda d: d.get("os-vol-tenant-attr:tenant_id"),
    ),
    (
        "network",
        "/floatingips",
        "/v2.0",
        "floatingips",
        {},
        lambda d: d.get("project_id") or d.get("tenant_id"),
    ),
    ("image", "/images", "/v2", "images", {"visibility": "all"}, lambda d: d.get("owner")),
    ("load-balancer", "/lbaas/loadbalancers", "/v2", "loadbalancers", {}, lambda d: d.get("project_id")),
)


async def _reach(
    client: httpx.AsyncClient, grant: Grant, settings: OpenStackSettings, report: AccountCheck
) -> None:
    for service, path, versioned, key, params, owner in LISTINGS:
        if not settings.includes(service):
            continue
        try:
            url = (
                under(grant.endpoint(service), path, versioned)
                if versioned
                else grant.endpoint(service) + path
            )
            body = await get_json(client, url, {**params, "limit": "1000"})
        except (EndpointMissing, ListingFailed) as exc:
            report.findings.append(f"{service}: {exc}")
            continue
        items = body.get(key) if isinstance(body, dict) else None
        if not isinstance(items, list):
            # A proxy's or a wrong endpoint's JSON: a finding like any other answer that is no listing.
            report.findings.append(f"{service}: the answer has no {key} list")
            continue
        projects = _projects(items, owner) - {grant.project_id}
        if projects:
            report.ok.append(f"{service}: sees {len(projects)} project(s) beyond its own")
        else:
            report.findings.append(
                f"{service}: sees no project beyond its own "
                "(an account that is not admin gets a narrowed listing)"
            )


RULES: tuple[tuple[str, str, str, str], ...] = (
    ("compute", "/**/servers/detail", "/servers/detail", ""),
    ("compute", "/**/flavors/detail", "/flavors/detail", ""),
    ("compute", "/**/", "/", ""),
    ("block-storage", "/**/volumes/detail", "/volumes/detail", ""),
    ("block-storage", "/**/types", "/types", ""),
    ("network", "/**/floatingips", "/floatingips", "/v2.0"),
    ("image", "/**/images", "/images", "/v2"),
    ("load-balancer", "/**/lbaas/loadbalancers", "/lbaas/loadbalancers", "/v2"),
)


async def _rules(
    client: httpx.AsyncClient, grant: Grant, settings: OpenStackSettings, report: AccountCheck
) -> None:
    for service, rule, suffix, versioned in RULES:
        if not settings.includes(service):
            continue
        try:
            url = (
                under(grant.endpoint(service), suffix, versioned)
                if versioned
                else grant.endpoint(service) + suffix
            )
        except EndpointMissing:
            continue
        try:
            response = await client.get(
                url, params={"limit": "1"} if suffix != "/" else None, timeout=request_timeout()
            )
        except httpx.HTTPError as exc:
            report.findings.append(f"access rules: {service} GET {rule}: {type(exc).__name__}: {exc}")
            continue
        if response.status_code == 401:
            report.findings.append(
                f"access rules: {service} GET {rule} answered 401: the credential lacks the rule, "
                "or the API cannot validate access rules (service_type)"
            )
    if not any(f.startswith("access rules") for f in report.findings):
        report.ok.append("access rules: every request a run sends is answered")
