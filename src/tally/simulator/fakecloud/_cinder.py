"""Cinder of the fake cloud: the version document, volumes/detail and types.

``all_tenants`` from an account without admin is ignored, as cinder ignores it: the answer is 200
with the caller's own project. ``volume_type_id`` appears from microversion 3.63.
"""

from __future__ import annotations

from typing import Any, Final

from quart import Response

from ..world import Resource, Segment
from ._common import (
    api_fault as fault,
)
from ._common import (
    json_response,
    naive_micro,
    negotiate_microversion,
    page,
    parse_limit,
    query_string,
    truthy,
)
from ._context import Ctx

MIN_VERSION: Final = (3, 0)
MAX_VERSION: Final = (3, 70)
MAX_LIMIT: Final = 1000


def negotiate(headers: Any) -> tuple[int, int] | Response:
    """The microversion a request asks for (3.0 when none), or cinder's 400/406 answer."""
    return negotiate_microversion(
        headers,
        services=("volume", "block-storage"),
        legacy_header=None,
        minimum=MIN_VERSION,
        maximum=MAX_VERSION,
    )


def version_headers(version: tuple[int, int]) -> dict[str, str]:
    return {"OpenStack-API-Version": f"volume {version[0]}.{version[1]}", "Vary": "OpenStack-API-Version"}


def versions(root: str) -> Response:
    """``GET /`` and ``GET /v3/``: cinder answers both with the list of its versions (the one v3)."""
    return json_response(
        {
            "versions": [
                {
                    "id": "v3.0",
                    "status": "CURRENT",
                    "version": f"{MAX_VERSION[0]}.{MAX_VERSION[1]}",
                    "min_version": "3.0",
                    "updated": "2023-08-31T00:00:00Z",
                    "links": [{"rel": "self", "href": f"{root}/v3/"}],
                    "media-types": [
                        {
                            "base": "application/json",
                            "type": "application/vnd.openstack.volume+json;version=3",
                        }
                    ],
                }
            ]
        }
    )


def _volume(
    ctx: Ctx, r: Resource, seg: Segment, version: tuple[int, int], root: str, project: str
) -> dict[str, Any]:
    vtype = ctx.world.volume_type(seg.volume_type_id or "")
    updated = r.updated_at(ctx.instant)
    if updated is None and seg.transition is None:
        # Cinder writes the row again when the create finishes: updated_at is null only while creating.
        updated = r.created_at
    attachments = []
    if seg.attached_to:
        attachments.append(
            {
                "server_id": seg.attached_to,
                "attachment_id": seg.attached_to,
                "attached_at": naive_micro(seg.start + ctx.skew),
                "host_name": None,
                "volume_id": r.resource_id,
                "device": "/dev/vdb",
                "id": r.resource_id,
            }
        )
    body: dict[str, Any] = {
        "id": r.resource_id,
        "name": r.name,
        "description": None,
        "size": seg.size_gb,
        "status": seg.transition or seg.state,
        "volume_type": vtype.name if vtype else None,
        "os-vol-tenant-attr:tenant_id": seg.project_id,
        "user_id": r.user_id,
        "availability_zone": "nova",
        "bootable": "false",
        "multiattach": False,
        "encrypted": False,
        "snapshot_id": None,
        "source_volid": None,
        "metadata": {},
        "migration_status": None,
        "replication_status": None,
        "consistencygroup_id": None,
        "created_at": naive_micro(r.created_at + ctx.skew),
        "updated_at": naive_micro(updated + ctx.skew) if updated else None,
        "attachments": attachments,
        "links": [
            {"rel": "self", "href": f"{root}/v3/{project}/volumes/{r.resource_id}"},
            {"rel": "bookmark", "href": f"{root}/volumes/{r.resource_id}"},
        ],
    }
    if version >= (3, 63):
        body["volume_type_id"] = seg.volume_type_id
    if ctx.token.is_admin:
        # Cinder's admin-only attributes (host and migration extensions).
        body["os-vol-host-attr:host"] = "storage-01@lvm#lvm"
        body["os-vol-mig-status-attr:migstat"] = None
        body["os-vol-mig-status-attr:name_id"] = None
    return body


def volumes_detail(ctx: Ctx, version: tuple[int, int], root: str, url_project: str) -> Response:
    args = ctx.args
    headers = version_headers(version)
    limit = parse_limit(args.get("limit"))
    if isinstance(limit, str):
        return fault(400, f"Invalid input received: limit param must be an integer, not {limit}", headers)
    effective = MAX_LIMIT if limit is None else min(limit, MAX_LIMIT)
    all_tenants = (
        ctx.token.is_admin and "all_tenants" in args and truthy(args.get("all_tenants")) is not False
    )
    project = None if all_tenants else ctx.token.project_id
    if all_tenants and args.get("project_id"):
        project = args["project_id"]
    start = 0
    marker = args.get("marker")
    if marker is not None:
        position = ctx.world.position_after("volume", marker)
        if position is None:
            return fault(404, f"Marker {marker} could not be found.", headers)
        start = position
    instant = ctx.instant

    def admit(r: Resource) -> Segment | None:
        seg = r.segment_at(instant)
        if seg is None or (project is not None and seg.project_id != project):
            return None
        return seg

    rows = page(ctx.world, "volume", start, effective, admit, at=ctx.instant)
    body: dict[str, Any] = {"volumes": [_volume(ctx, r, seg, version, root, url_project) for r, seg in rows]}
    if rows and len(rows) >= effective:
        params = [(k, v) for k, v in args.items(multi=True) if k != "marker"] + [
            ("marker", rows[-1][0].resource_id)
        ]
        body["volumes_links"] = [
            {"rel": "next", "href": f"{root}/v3/{url_project}/volumes/detail?{query_string(params)}"}
        ]
    return json_response(body, 200, headers)


def types(ctx: Ctx, version: tuple[int, int], root: str, url_project: str) -> Response:
    headers = version_headers(version)
    if ctx.faults.volume_types_refused:
        return fault(403, "Policy doesn't allow volume_extension:types_manage to be performed.", headers)
    raw = ctx.args.get("is_public")
    want: bool | None = True
    if ctx.token.is_admin and raw is not None:
        if raw.lower() == "none":
            want = None
        else:
            parsed = truthy(raw)
            if parsed is None:
                return fault(400, f"Invalid is_public filter [{raw}]", headers)
            want = parsed
    elif not ctx.token.is_admin:
        want = True
    limit = parse_limit(ctx.args.get("limit"))
    if isinstance(limit, str):
        return fault(400, f"Invalid input received: limit param must be an integer, not {limit}", headers)
    # Sorted by id so a marker pages; like cinder, a page is capped at osapi_max_limit and carries no
    # next link, so a client that waits for one stops at the first 1000 types.
    chosen = sorted(
        (t for t in ctx.world.volume_types if want is None or t.is_public == want), key=lambda t: t.id
    )
    marker = ctx.args.get("marker")
    if marker is not None:
        ids = [t.id for t in chosen]
        if marker not in ids:
            return fault(404, f"Marker {marker} could not be found.", headers)
        chosen = chosen[ids.index(marker) + 1 :]
    chosen = chosen[: MAX_LIMIT if limit is None else min(limit, MAX_LIMIT)]
    out: list[dict[str, Any]] = [
        {
            "id": t.id,
            "name": t.name,
            "description": t.description,
            "is_public": t.is_public,
            "os-volume-type-access:is_public": t.is_public,
            "extra_specs": {},
            "qos_specs_id": None,
        }
        for t in chosen
    ]
    return json_response({"volume_types": out}, 200, headers)
