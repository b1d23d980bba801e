"""Glance of the fake cloud: the version document and v2 images.

A relative ``next`` string when the page is full, default limit 25 (max 1000). An admin sees every
image but community ones unless ``visibility=all``; any other account sees its own, the public and
the community images. A hidden image (``os_hidden``) is listed only to ``os_hidden=true``. An image
shows the glance status of its segment (``queued`` before its data, ``size`` null then).
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

from quart import Response

from ..world import Resource, Segment
from ._common import json_response, page, parse_limit, query_string, z_seconds
from ._context import Ctx

DEFAULT_LIMIT: Final = 25
MAX_LIMIT: Final = 1000


def error(code: int, message: str) -> Response:
    titles = {400: "400 Bad Request", 403: "403 Forbidden", 404: "404 Not Found"}
    title = titles.get(code, f"{code} Error")
    text = (
        f"<html>\n <head>\n  <title>{title}</title>\n </head>\n <body>\n  <h1>{title}</h1>\n"
        f"  {message}<br /><br />\n\n\n\n </body>\n</html>"
    )
    return Response(text, status=code, content_type="text/html; charset=UTF-8")


def versions(root: str) -> Response:
    entries = [
        {
            "id": f"v2.{minor}",
            "status": "CURRENT" if minor == 16 else "SUPPORTED",
            "links": [{"rel": "self", "href": f"{root}/v2/"}],
        }
        for minor in range(16, -1, -1)
    ]
    return json_response({"versions": entries}, 300)


def _digest(algorithm: str, text: str) -> str:
    return hashlib.new(algorithm, text.encode()).hexdigest()


def _image(ctx: Ctx, r: Resource, seg: Segment) -> dict[str, Any]:
    updated = r.updated_at(ctx.instant) or r.created_at
    return {
        "id": r.resource_id,
        "name": r.name,
        "owner": None if ctx.faults.images_without_owner else seg.project_id,
        "status": seg.transition or seg.state,
        "visibility": r.visibility,
        "size": seg.size_bytes,
        "virtual_size": seg.size_bytes,
        "disk_format": "qcow2" if seg.size_bytes is not None else None,
        "container_format": "bare" if seg.size_bytes is not None else None,
        # An image with data has the digests glance computed on upload; one without has none.
        "checksum": _digest("md5", r.resource_id) if seg.size_bytes is not None else None,
        "os_hash_algo": "sha512" if seg.size_bytes is not None else None,
        "os_hash_value": _digest("sha512", r.resource_id) if seg.size_bytes is not None else None,
        "os_hidden": r.hidden,
        "protected": False,
        "min_disk": 0,
        "min_ram": 0,
        "tags": [],
        "created_at": z_seconds(r.created_at + ctx.skew),
        "updated_at": z_seconds(updated + ctx.skew),
        "self": f"/v2/images/{r.resource_id}",
        "file": f"/v2/images/{r.resource_id}/file",
        "schema": "/v2/schemas/image",
    }


def images(ctx: Ctx) -> Response:
    args = ctx.args
    limit = parse_limit(args.get("limit"))
    if isinstance(limit, str):
        return error(400, "limit param must be an integer")
    effective = DEFAULT_LIMIT if limit is None else min(limit, MAX_LIMIT)
    visibility = args.get("visibility")
    if visibility is not None and visibility not in ("public", "private", "shared", "community", "all"):
        return error(400, f"Invalid visibility value: {visibility}")
    hidden = args.get("os_hidden")
    if hidden is not None and hidden.lower() not in ("true", "false"):
        return error(
            400, f"Invalid value '{hidden}' for 'os_hidden' filter. Valid values are 'true' or 'false'."
        )
    want_hidden = hidden is not None and hidden.lower() == "true"
    owner = args.get("owner")
    start = 0
    marker = args.get("marker")
    if marker is not None:
        position = ctx.world.position_after("image", marker)
        if position is None:
            return error(400, f"Marker {marker} could not be found.")
        start = position
    instant, admin, me = ctx.instant, ctx.token.is_admin, ctx.token.project_id

    def admit(r: Resource) -> Segment | None:
        seg = r.segment_at(instant)
        # Glance leaves a hidden image out of every listing but the one that asks for os_hidden=true.
        if seg is None or r.hidden != want_hidden:
            return None
        if visibility not in (None, "all") and r.visibility != visibility:
            return None
        if visibility is None and admin and r.visibility == "community":
            return None
        if not admin and seg.project_id != me and r.visibility not in ("public", "community"):
            return None
        if owner is not None and seg.project_id != owner:
            return None
        return seg

    rows = page(ctx.world, "image", start, effective, admit, at=ctx.instant)
    base = [(k, v) for k, v in args.items(multi=True) if k != "marker"]
    body: dict[str, Any] = {
        "images": [_image(ctx, r, seg) for r, seg in rows],
        "first": f"/v2/images?{query_string(base)}" if base else "/v2/images",
        "schema": "/v2/schemas/images",
    }
    if rows and len(rows) == effective:
        body["next"] = f"/v2/images?{query_string([*base, ('marker', rows[-1][0].resource_id)])}"
    return json_response(body)
