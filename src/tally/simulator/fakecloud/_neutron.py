"""Neutron of the fake cloud: the version document and floatingips.

Pagination is off unless ``limit`` is sent; with it, a full page carries ``next`` and a page after a
marker carries ``previous``. An account without admin sees its own project's addresses.
"""

from __future__ import annotations

from typing import Any

from quart import Response

from ..world import Resource, Segment
from ._common import json_response, page, parse_limit, query_string, z_seconds
from ._context import Ctx


def error(code: int, kind: str, message: str) -> Response:
    return json_response({"NeutronError": {"type": kind, "message": message, "detail": ""}}, code)


def versions(root: str) -> Response:
    return json_response(
        {
            "versions": [
                {"id": "v2.0", "status": "CURRENT", "links": [{"rel": "self", "href": f"{root}/v2.0/"}]}
            ]
        }
    )


def _fip(ctx: Ctx, r: Resource, seg: Segment) -> dict[str, Any]:
    updated = r.updated_at(ctx.instant) or r.created_at
    associated = seg.attached_to is not None
    return {
        "id": r.resource_id,
        "tenant_id": seg.project_id,
        "project_id": seg.project_id,
        "status": "ACTIVE" if associated else "DOWN",
        "floating_ip_address": seg.address,
        "floating_network_id": "c1b3e7a2-4f4e-4b8e-9f60-2f1f0c1d2e3f",
        "fixed_ip_address": "10.0.0.10" if associated else None,
        "port_id": seg.attached_to,
        "router_id": None,
        "description": "",
        "dns_domain": "",
        "dns_name": "",
        "port_details": None,
        "port_forwardings": [],
        "qos_policy_id": None,
        "qos_network_policy_id": None,
        "tags": [],
        "created_at": z_seconds(r.created_at + ctx.skew),
        "updated_at": z_seconds(updated + ctx.skew),
        "revision_number": len(r.timeline),
    }


def floatingips(ctx: Ctx, root: str) -> Response:
    args = ctx.args
    limit = parse_limit(args.get("limit"))
    if isinstance(limit, str):
        return error(
            400, "BadRequest", f"Bad limit request: Limit must be an integer 0 or greater and not '{limit}'."
        )
    project: str | None = None if ctx.token.is_admin else ctx.token.project_id
    wanted = args.get("project_id") or args.get("tenant_id")
    if wanted and ctx.token.is_admin:
        project = wanted
    start = 0
    marker = args.get("marker")
    if marker is not None and limit:
        position = ctx.world.position_after("floating_ip", marker)
        if position is None:
            return error(404, "FloatingIPNotFound", f"Floating IP {marker} could not be found.")
        start = position
    instant = ctx.instant

    def admit(r: Resource) -> Segment | None:
        seg = r.segment_at(instant)
        if seg is None or (project is not None and seg.project_id != project):
            return None
        return seg

    effective = limit if limit else len(ctx.world.of_type("floating_ip"))
    rows = page(ctx.world, "floating_ip", start, effective, admit, at=ctx.instant)
    body: dict[str, Any] = {"floatingips": [_fip(ctx, r, seg) for r, seg in rows]}
    if limit:
        links = []
        base = [(k, v) for k, v in args.items(multi=True) if k not in ("marker", "page_reverse")]
        if len(rows) >= limit:
            last = rows[-1][0].resource_id
            links.append(
                {
                    "rel": "next",
                    "href": f"{root}/v2.0/floatingips?{query_string([*base, ('marker', last)])}",
                }
            )
        if marker is not None and rows:
            prev = [*base, ("marker", rows[0][0].resource_id), ("page_reverse", "True")]
            links.append({"rel": "previous", "href": f"{root}/v2.0/floatingips?{query_string(prev)}"})
        body["floatingips_links"] = links
    return json_response(body)
