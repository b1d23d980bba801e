"""Octavia of the fake cloud: the version document and lbaas/loadbalancers.

``PENDING_DELETE`` balancers are listed, ``DELETED`` ones never. Listeners and pools are id lists
whose lengths are the world's counts. The links keep only limit, sort keys and marker.
"""

from __future__ import annotations

from typing import Any, Final

from quart import Response

from ..world import Resource, Segment
from ._common import json_response, naive_seconds, page, parse_limit, query_string
from ._context import Ctx

MAX_LIMIT: Final = 1000


def fault(code: int, message: str) -> Response:
    return json_response(
        {"faultcode": "Client" if code < 500 else "Server", "faultstring": message, "debuginfo": None}, code
    )


def versions(root: str) -> Response:
    return json_response(
        {
            "versions": [
                {
                    "id": "v2.0",
                    "status": "SUPPORTED",
                    "updated": "2016-12-11T00:00:00Z",
                    "links": [{"rel": "self", "href": f"{root}/v2.0"}],
                },
                {
                    "id": "v2",
                    "status": "CURRENT",
                    "updated": "2024-10-01T00:00:00Z",
                    "links": [{"rel": "self", "href": f"{root}/v2"}],
                },
            ]
        }
    )


def _derived(lb_id: str, n: int) -> str:
    # A stable id per (balancer, n) that costs a string slice, not a hash: pages of a thousand
    # balancers build these thousands of times per request.
    return f"{lb_id[:-4]}{(int(lb_id[-4:], 16) + n) % 0x10000:04x}"


def _children(lb_id: str, kind: str, count: int) -> list[dict[str, str]]:
    base = 0x4000 if kind == "listener" else 0x8000
    return [{"id": _derived(lb_id, base + i)} for i in range(count)]


def _lb(ctx: Ctx, r: Resource, seg: Segment) -> dict[str, Any]:
    updated = r.updated_at(ctx.instant)
    if updated is None and seg.transition is None:
        # Octavia writes the row again when the provider reports it ACTIVE: null only while pending.
        updated = r.created_at
    provisioning = seg.transition or ("ERROR" if seg.state == "error" else "ACTIVE")
    return {
        "id": r.resource_id,
        "name": r.name,
        "description": "",
        "project_id": seg.project_id,
        "tenant_id": seg.project_id,
        "provisioning_status": provisioning,
        "operating_status": "ONLINE" if provisioning == "ACTIVE" else "OFFLINE",
        "admin_state_up": True,
        "listeners": _children(r.resource_id, "listener", seg.listeners or 0),
        "pools": _children(r.resource_id, "pool", seg.pools or 0),
        "vip_address": "198.51.100." + str(int(r.resource_id[:2], 16) % 250 + 2),
        "vip_port_id": _derived(r.resource_id, 0xC000),
        "vip_subnet_id": "d4af86e1-0051-488c-b7a0-527f97490c9a",
        "vip_network_id": "d0d217df-3958-4fbf-a3c2-8dad2908c709",
        "vip_qos_policy_id": None,
        "vip_sg_ids": [],
        "additional_vips": [],
        "vip_vnic_type": "normal",
        "provider": "amphora",
        "flavor_id": None,
        "availability_zone": None,
        "tags": [],
        "created_at": naive_seconds(r.created_at + ctx.skew),
        "updated_at": naive_seconds(updated + ctx.skew) if updated else None,
    }


def loadbalancers(ctx: Ctx, root: str) -> Response:
    args = ctx.args
    limit = parse_limit(args.get("limit"))
    if isinstance(limit, str) or limit == 0:
        return fault(400, f"Invalid input for field/attribute limit. Value: '{args.get('limit')}'.")
    effective = MAX_LIMIT if limit is None else min(limit, MAX_LIMIT)
    project: str | None = None if ctx.token.is_admin else ctx.token.project_id
    wanted = args.get("project_id")
    if wanted is not None:
        if not ctx.token.is_admin and wanted != ctx.token.project_id:
            return fault(403, "Policy does not allow this request to be performed.")
        project = wanted
    start = 0
    marker = args.get("marker")
    if marker is not None:
        position = ctx.world.position_after("loadbalancer", marker)
        if position is None:
            return fault(400, f"Invalid marker: {marker}")
        start = position
    instant = ctx.instant

    def admit(r: Resource) -> Segment | None:
        seg = r.segment_at(instant)
        if seg is None or (project is not None and seg.project_id != project):
            return None
        return seg

    rows = page(ctx.world, "loadbalancer", start, effective, admit, at=ctx.instant)
    body: dict[str, Any] = {"loadbalancers": [_lb(ctx, r, seg) for r, seg in rows]}
    links = []
    kept = [(k, v) for k, v in args.items(multi=True) if k in ("limit", "sort", "sort_key", "sort_dir")]
    if rows and len(rows) >= effective:
        nxt = [*kept, ("marker", rows[-1][0].resource_id)]
        links.append({"rel": "next", "href": f"{root}/v2/lbaas/loadbalancers?{query_string(nxt)}"})
    if marker is not None and rows:
        prev = [*kept, ("marker", rows[0][0].resource_id), ("page_reverse", "True")]
        links.append({"rel": "previous", "href": f"{root}/v2/lbaas/loadbalancers?{query_string(prev)}"})
    body["loadbalancers_links"] = links
    return json_response(body)
