"""``--register-projects``: the month's tenants and Gardener projects, registered through the Reporting API.

One ``openstack`` project per tenant under the simulated cloud (``TALLY_SIM_CLOUD``), one
``gardener`` project per Gardener project (``alpha``, ``beta``) under ``TALLY_SIM_GARDEN_CLOUD``,
and from each Gardener project an ``infrastructure_tenant`` relation to its tenant, valid from the
month start. A project that exists already (409) is looked up and reused, so a second run of the
same month registers nothing twice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx

from tally.core import format_instant
from tally.simulator.generator import TenantInfo

log = logging.getLogger(__name__)


class RegisterError(RuntimeError):
    """The Reporting API refused a registration; the message names the call and its answer."""


@dataclass(frozen=True)
class Registered:
    projects: int
    created: int
    relations: int


async def _project(
    client: httpx.AsyncClient, platform: str, cloud: str, external_id: str, name: str
) -> tuple[str, bool]:
    body = {"platform": platform, "cloud": cloud, "external_id": external_id, "name": name}
    response = await client.post("/api/v1/projects", json=body)
    if response.status_code == 201:
        return str(response.json()["id"]), True
    if response.status_code == 409:
        listing = await client.get(
            "/api/v1/projects", params={"platform": platform, "cloud": cloud, "limit": 1000}
        )
        _check(listing, f"GET /api/v1/projects?cloud={cloud}")
        for item in listing.json().get("items", []):
            if item.get("external_id") == external_id:
                return str(item["id"]), False
    _check(response, f"POST /api/v1/projects {platform}/{cloud}/{external_id}")
    raise RegisterError(f"POST /api/v1/projects {external_id}: unexpected answer {response.status_code}")


def _check(response: httpx.Response, what: str) -> None:
    if response.is_success:
        return
    detail = response.text.strip().replace("\n", " ")[:300]
    raise RegisterError(f"{what}: HTTP {response.status_code}: {detail}")


async def register_projects(
    base_url: str,
    token: str,
    tenants: Sequence[TenantInfo],
    *,
    cloud: str,
    garden_cloud: str,
    valid_from: datetime,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Registered:
    """Register ``tenants`` (see the module docstring); raises RegisterError on a refused call."""
    if cloud == garden_cloud:
        raise RegisterError(f"TALLY_SIM_GARDEN_CLOUD must differ from TALLY_SIM_CLOUD (both {cloud!r})")
    headers = {"Authorization": f"Bearer {token}"}
    created = relations = 0
    kwargs: dict[str, Any] = {"transport": transport} if transport is not None else {}
    async with httpx.AsyncClient(
        base_url=base_url.rstrip("/"), headers=headers, timeout=30.0, **kwargs
    ) as client:
        ids: dict[str, str] = {}
        for tenant in tenants:
            ids[tenant.project_id], new = await _project(
                client, "openstack", cloud, tenant.project_id, tenant.name
            )
            created += new
        count = len(tenants)
        for tenant in tenants:
            if tenant.gardener_project is None:
                continue
            garden_id, new = await _project(
                client, "gardener", garden_cloud, tenant.gardener_project, tenant.gardener_project
            )
            created += new
            count += 1
            existing = await client.get(f"/api/v1/projects/{garden_id}/relations")
            _check(existing, f"GET /api/v1/projects/{garden_id}/relations")
            target = ids[tenant.project_id]
            if any(
                r.get("target_id") == target and r.get("relation_type") == "infrastructure_tenant"
                for r in existing.json().get("items", [])
            ):
                continue
            response = await client.post(
                f"/api/v1/projects/{garden_id}/relations",
                json={
                    "target_id": target,
                    "relation_type": "infrastructure_tenant",
                    "valid_from": format_instant(valid_from),
                },
            )
            _check(response, f"POST /api/v1/projects/{garden_id}/relations")
            relations += 1
    log.info("projects registered projects=%d created=%d relations=%d", count, created, relations)
    return Registered(count, created, relations)
