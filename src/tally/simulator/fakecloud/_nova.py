"""Nova of the fake cloud: the version document, microversions, servers/detail and flavors/detail.

Servers are listed in resource-id order (real nova sorts by created_at desc; a client pages by
marker either way). Deleted servers stay listable with ``deleted=true`` or ``changes-since``, as
nova keeps their rows until an operator archives them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from quart import Response

from ..world import Flavor, Resource, Segment
from ._common import (
    api_fault as fault,
)
from ._common import (
    json_response,
    naive_micro,
    negotiate_microversion,
    page,
    parse_limit,
    parse_time_param,
    query_string,
    truthy,
    version_text,
    z_seconds,
)
from ._context import Ctx

MIN_VERSION: Final = (2, 1)
MAX_VERSION: Final = (2, 96)
MAX_LIMIT: Final = 1000

_VM_STATE: Final = {
    "active": "active",
    "shutoff": "stopped",
    "shelved": "shelved_offloaded",
    "paused": "paused",
    "suspended": "suspended",
    "error": "error",
    "soft_deleted": "soft-delete",
}
_POWER: Final = {
    "active": 1,
    "stopped": 4,
    "shelved_offloaded": 4,
    "paused": 3,
    "suspended": 7,
    "error": 0,
    "soft-delete": 4,
}
_STATUS: Final = {
    "active": "ACTIVE",
    "building": "BUILD",
    "stopped": "SHUTOFF",
    "paused": "PAUSED",
    "suspended": "SUSPENDED",
    "error": "ERROR",
    "deleted": "DELETED",
    "shelved_offloaded": "SHELVED_OFFLOADED",
    "soft-delete": "SOFT_DELETED",
}
# The vm_state of a server nova soft-deleted: restorable, listed (like a deleted one) only with
# deleted=true or changes-since.
_SOFT_DELETED: Final = "soft_deleted"
# Real nova touches a deleted server's row once more about two minutes after the deletion (seen on
# nova 34 with the fake virt driver: the compute host's periodic cleanup of deleted instances), and
# changes-since reads ``updated``: one deletion can come back in a later run's window.
DELETED_CLEANUP: Final = timedelta(minutes=2)
_RESIZE: Final = frozenset({"resize_prep", "resize_migrating", "resize_migrated", "resize_finish"})


def negotiate(headers: Any) -> tuple[int, int] | Response:
    """The microversion a request asks for (2.1 when none), or nova's 400/406 answer."""
    return negotiate_microversion(
        headers,
        services=("compute",),
        legacy_header="X-OpenStack-Nova-API-Version",
        minimum=MIN_VERSION,
        maximum=MAX_VERSION,
    )


def version_headers(version: tuple[int, int]) -> dict[str, str]:
    text = version_text(version)
    return {
        "OpenStack-API-Version": f"compute {text}",
        "X-OpenStack-Nova-API-Version": text,
        "Vary": "OpenStack-API-Version, X-OpenStack-Nova-API-Version",
    }


def _version_doc(root: str) -> dict[str, Any]:
    return {
        "id": "v2.1",
        "status": "CURRENT",
        "version": version_text(MAX_VERSION),
        "min_version": version_text(MIN_VERSION),
        "updated": "2013-07-23T11:33:21Z",
        "links": [
            {"rel": "self", "href": f"{root}/v2.1/"},
            {"rel": "describedby", "type": "text/html", "href": "http://docs.openstack.org/"},
        ],
    }


def versions(root: str) -> Response:
    v20 = {
        "id": "v2.0",
        "status": "DEPRECATED",
        "version": "",
        "min_version": "",
        "updated": "2025-07-04T12:00:00Z",
        "links": [{"rel": "self", "href": f"{root}/v2/"}],
    }
    return json_response({"versions": [v20, _version_doc(root)]})


def version(root: str) -> Response:
    doc = _version_doc(root)
    doc["media-types"] = [
        {"base": "application/json", "type": "application/vnd.openstack.compute+json;version=2.1"}
    ]
    # Nova answers its version document at the base microversion, and says so.
    return json_response({"version": doc}, headers=version_headers(MIN_VERSION))


def _flavor_view(
    flavor: Flavor | None, flavor_id: str, version: tuple[int, int], root: str
) -> dict[str, Any]:
    if version >= (2, 47):
        if flavor is None:
            return {}
        return {
            "original_name": flavor.name,
            "vcpus": flavor.vcpus,
            "ram": flavor.ram_mb,
            "disk": flavor.disk_gb,
            "ephemeral": flavor.ephemeral_gb,
            "swap": flavor.swap_mb,
            "extra_specs": {},
        }
    return {"id": flavor_id, "links": [{"rel": "bookmark", "href": f"{root}/flavors/{flavor_id}"}]}


def _deleted_updated(r: Resource, instant: datetime) -> datetime:
    """``updated`` of a deleted server as of ``instant``: its deletion, then the cleanup after it."""
    terminated = r.terminated_at or r.created_at
    cleaned = terminated + DELETED_CLEANUP
    return cleaned if instant >= cleaned else terminated


def _server(
    ctx: Ctx, r: Resource, seg: Segment | None, version: tuple[int, int], root: str
) -> dict[str, Any]:
    skew = ctx.skew
    created = r.created_at + skew
    if seg is None:  # deleted
        last = r.last
        vm_state, task_state, power, status = "deleted", None, 0, "DELETED"
        project, flavor_id = last.project_id, last.flavor_id or ""
        updated = _deleted_updated(r, ctx.instant) + skew
    else:
        project, flavor_id = seg.project_id, seg.flavor_id or ""
        if seg.transition == "building":
            vm_state, task_state = "building", "spawning"
        else:
            vm_state, task_state = _VM_STATE[seg.state], seg.transition
        power = 0 if vm_state == "building" else _POWER[vm_state]
        status = _status_of(seg)
        updated = (r.updated_at(ctx.instant) or r.created_at) + skew
    launched = r.launched_at
    # A server destroyed while building was never launched: nova leaves its launched_at null.
    never_launched = r.timeline[0].transition == "building" and launched == r.terminated_at
    visible_launch = launched is not None and launched <= ctx.instant and not never_launched
    body: dict[str, Any] = {
        "id": r.resource_id,
        "name": r.name,
        "tenant_id": project,
        "user_id": r.user_id,
        "status": status,
        "OS-EXT-STS:vm_state": vm_state,
        "OS-EXT-STS:task_state": task_state,
        "OS-EXT-STS:power_state": power,
        "OS-EXT-AZ:availability_zone": "nova",
        "created": z_seconds(created),
        "updated": z_seconds(updated),
        "OS-SRV-USG:launched_at": naive_micro(launched + skew) if launched and visible_launch else None,
        "OS-SRV-USG:terminated_at": naive_micro(r.terminated_at + skew)
        if seg is None and r.terminated_at
        else None,
        "flavor": _flavor_view(ctx.world.flavor(flavor_id), flavor_id, version, root),
        "image": "",
        "metadata": {},
        "addresses": {},
        "key_name": None,
        "hostId": "",
        "accessIPv4": "",
        "accessIPv6": "",
        "os-extended-volumes:volumes_attached": [],
        "links": [
            {"rel": "self", "href": f"{root}/v2.1/servers/{r.resource_id}"},
            {"rel": "bookmark", "href": f"{root}/servers/{r.resource_id}"},
        ],
    }
    body.update({"OS-DCF:diskConfig": "MANUAL", "config_drive": "", "security_groups": [{"name": "default"}]})
    if ctx.token.is_admin:
        body.update(_admin_attributes(r, version))
    if version >= (2, 9):
        body["locked"] = False
    if version >= (2, 26):
        body["tags"] = []
    if version >= (2, 19):
        body["description"] = None
    if status in ("ACTIVE", "BUILD", "REBUILD", "RESIZE", "VERIFY_RESIZE", "MIGRATING"):
        body["progress"] = 0 if status == "BUILD" else 100
    return body


def _status_of(seg: Segment) -> str:
    """The API status of a live server's segment (nova's ``common._STATE_MAP``)."""
    if seg.transition == "building":
        return "BUILD"
    vm_state = _VM_STATE[seg.state]
    status = _STATUS[vm_state]
    return _task_status(vm_state, seg.transition, status) if seg.transition else status


def _admin_attributes(r: Resource, version: tuple[int, int]) -> dict[str, Any]:
    """The extended server attributes nova shows an admin (host placement; more from 2.3 and 2.16)."""
    host = "compute-0" + str(int(r.resource_id[:2], 16) % 4 + 1)
    attrs: dict[str, Any] = {
        "OS-EXT-SRV-ATTR:host": host,
        "OS-EXT-SRV-ATTR:hypervisor_hostname": host,
        "OS-EXT-SRV-ATTR:instance_name": f"instance-{int(r.resource_id[:6], 16):08x}",
    }
    if version >= (2, 3):
        attrs.update(
            {
                "OS-EXT-SRV-ATTR:hostname": r.name,
                "OS-EXT-SRV-ATTR:kernel_id": "",
                "OS-EXT-SRV-ATTR:launch_index": 0,
                "OS-EXT-SRV-ATTR:ramdisk_id": "",
                "OS-EXT-SRV-ATTR:reservation_id": "r-" + r.resource_id[:8],
                "OS-EXT-SRV-ATTR:root_device_name": "/dev/vda",
                "OS-EXT-SRV-ATTR:user_data": None,
            }
        )
    if version >= (2, 16):
        attrs["host_status"] = "UP"
    return attrs


def _task_status(vm_state: str, task: str, default: str) -> str:
    if vm_state == "active":
        if task in ("rebooting", "reboot_pending", "reboot_started"):
            return "REBOOT"
        if task.endswith("_hard"):
            return "HARD_REBOOT"
        if task.startswith("rebuild"):
            return "REBUILD"
        if task == "migrating":
            return "MIGRATING"
        if task in _RESIZE:
            return "RESIZE"
    if vm_state == "stopped":
        if task in _RESIZE:
            return "RESIZE"
        if task.startswith("rebuild"):
            return "REBUILD"
    if vm_state == "paused" and task == "migrating":
        return "MIGRATING"
    if vm_state == "error" and task.startswith("rebuild"):
        return "REBUILD"
    return default


_ALL_TENANTS_REFUSED = "Policy doesn't allow os_compute_api:servers:detail:get_all_tenants to be performed."


@dataclass(frozen=True)
class _ServerFilter:
    """Which servers a ``GET /servers/detail`` lists, as nova reads its query: the instant it answers
    at, the project (None: every project), ``changes-since``, ``deleted`` and ``status``."""

    instant: datetime
    skew: timedelta
    project: str | None
    since: datetime | None
    deleted_flag: bool | None
    wanted_status: str | None

    def admit(self, r: Resource) -> Any:
        seen = self._listed(r)
        if seen is None or self.wanted_status is None:
            return seen
        status = "DELETED" if seen == "deleted" else _status_of(seen)
        return seen if status == self.wanted_status else None

    def _listed(self, r: Resource) -> Any:
        instant, since, deleted_flag = self.instant, self.since, self.deleted_flag
        if r.created_at > instant:
            # Not created yet (most of a month's servers, most of the month): the listing's commonest
            # answer, before the other checks.
            return None
        if r.terminated_at is not None and r.terminated_at <= instant:
            if deleted_flag is False or (deleted_flag is None and since is None):
                return None
            if self.project is not None and r.last.project_id != self.project:
                return None
            if since is not None and _deleted_updated(r, instant) + self.skew < since:
                return None
            return "deleted"
        seg = r.segment_at(instant)
        if seg is None or (self.project is not None and seg.project_id != self.project):
            return None
        soft_deleted = seg.state == _SOFT_DELETED
        if deleted_flag and not soft_deleted:
            return None
        if soft_deleted and (deleted_flag is False or (deleted_flag is None and since is None)):
            return None
        if since is not None and (r.updated_at(instant) or r.created_at) + self.skew < since:
            return None
        return seg


def _server_filter(ctx: Ctx, all_tenants: bool, headers: dict[str, str]) -> _ServerFilter | Response:
    """The filter of the request's query, or nova's 400 for a ``changes-since`` it cannot read."""
    args = ctx.args
    since = None
    if "changes-since" in args:
        since = parse_time_param(args["changes-since"])
        if since is None:
            value = args["changes-since"]
            return fault(
                400,
                f"Invalid input for query parameters changes-since. Value: {value}. "
                f"'{value}' is not a 'date-time'",
                headers,
            )
    deleted_flag = truthy(args.get("deleted")) if ctx.token.is_admin and "deleted" in args else None
    project = args.get("project_id") or args.get("tenant_id") if all_tenants else ctx.token.project_id
    wanted_status = args.get("status", "").upper() or None
    return _ServerFilter(ctx.instant, ctx.skew, project, since, deleted_flag, wanted_status)


def servers_detail(ctx: Ctx, version: tuple[int, int], root: str) -> Response:
    args = ctx.args
    headers = version_headers(version)
    all_tenants = "all_tenants" in args and truthy(args.get("all_tenants")) is not False
    if all_tenants and not ctx.token.is_admin:
        return fault(403, _ALL_TENANTS_REFUSED, headers)
    limit = parse_limit(args.get("limit"))
    if isinstance(limit, str):
        return fault(
            400, f"Invalid input for query parameters limit. Value: {limit}. '{limit}' is not valid", headers
        )
    if all_tenants and limit == 1 and ctx.faults.probe_refused:
        return fault(403, _ALL_TENANTS_REFUSED, headers)
    effective = MAX_LIMIT if limit is None else min(limit, MAX_LIMIT)
    wanted = _server_filter(ctx, all_tenants, headers)
    if isinstance(wanted, Response):
        return wanted
    start = 0
    marker = args.get("marker")
    if marker is not None:
        position = ctx.world.position_after("instance", marker)
        if position is None:
            return fault(400, f"marker [{marker}] not found", headers)
        start = position
    rows = page(ctx.world, "instance", start, effective, wanted.admit, at=ctx.instant)
    servers = [_server(ctx, r, None if seen == "deleted" else seen, version, root) for r, seen in rows]
    body: dict[str, Any] = {"servers": servers}
    if rows and len(rows) == effective:
        params = [(k, v) for k, v in args.items(multi=True) if k != "marker"]
        params.append(("marker", rows[-1][0].resource_id))
        body["servers_links"] = [
            {"rel": "next", "href": f"{root}/v2.1/servers/detail?{query_string(sorted(params))}"}
        ]
    return json_response(body, 200, headers)


def flavors_detail(ctx: Ctx, version: tuple[int, int], root: str) -> Response:
    args = ctx.args
    headers = version_headers(version)
    if ctx.faults.flavors_refused:
        return fault(403, "Policy doesn't allow os_compute_api:flavors:detail to be performed.", headers)
    limit = parse_limit(args.get("limit"))
    if isinstance(limit, str):
        return fault(400, f"Invalid input for query parameters limit. Value: {limit}.", headers)
    effective = MAX_LIMIT if limit is None else min(limit, MAX_LIMIT)
    is_public = args.get("is_public")
    include_private = ctx.token.is_admin and is_public is not None and is_public.lower() == "none"
    only_private = ctx.token.is_admin and is_public is not None and truthy(is_public) is False
    flavors = sorted(ctx.world.flavors, key=lambda f: f.id)
    chosen = [f for f in flavors if (include_private or (f.is_public != only_private))]
    marker = args.get("marker")
    if marker is not None:
        ids = [f.id for f in chosen]
        if marker not in ids:
            return fault(400, f"marker [{marker}] not found", headers)
        chosen = chosen[ids.index(marker) + 1 :]
    rows = chosen[:effective]
    out = []
    for f in rows:
        view: dict[str, Any] = {
            "id": f.id,
            "name": f.name,
            "ram": f.ram_mb,
            "disk": f.disk_gb,
            "vcpus": f.vcpus,
            "swap": f.swap_mb if version >= (2, 75) or f.swap_mb else "",
            "OS-FLV-EXT-DATA:ephemeral": f.ephemeral_gb,
            "os-flavor-access:is_public": f.is_public,
            "links": [{"rel": "self", "href": f"{root}/v2.1/flavors/{f.id}"}],
        }
        if version < (2, 102):
            view["OS-FLV-DISABLED:disabled"] = False
            view["rxtx_factor"] = 1.0
        if version >= (2, 55):
            view["description"] = None
        if version >= (2, 61):
            view["extra_specs"] = {}
        out.append(view)
    body: dict[str, Any] = {"flavors": out}
    if rows and len(rows) == effective:
        params = [(k, v) for k, v in args.items(multi=True) if k != "marker"] + [("marker", rows[-1].id)]
        body["flavors_links"] = [
            {"rel": "next", "href": f"{root}/v2.1/flavors/detail?{query_string(sorted(params))}"}
        ]
    return json_response(body, 200, headers)
