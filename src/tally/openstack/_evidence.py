"""From listing documents to observations: state, size, owner, instants and transition evidence.

Pure functions, one per type, plus one per transition rule (seed 000, "What a run
defers"). The rules of deferral live in the framework; what counts as evidence
of a transition is the platform's, and lives here.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tally.reconcile import DeletedResource, ObservedResource, SizeNameEntry

from ._instants import parse_platform_instant

# Cinder's statuses of a volume with an operation in flight; its other statuses are ones a volume rests in.
VOLUME_TRANSITIONAL = frozenset(
    {
        "creating",
        "deleting",
        "managing",
        "attaching",
        "detaching",
        "reserved",
        "restoring-backup",
        "backing-up",
        "downloading",
        "uploading",
        "retyping",
        "extending",
    }
)
VM_STATES = {
    "stopped": "shutoff",
    "shelved_offloaded": "shelved",
    "resized": "active",
    # Restorable until nova reclaims it (``reclaim_instance_interval``): not deleted, and billed as
    # the engine likes; the collector books the same state at soft_delete.end.
    "soft-delete": "soft_deleted",
}
# Nova's vm_state of a server deleted with a reclaim interval set; ``deleted=true`` lists it too.
SOFT_DELETED_VM_STATE = "soft-delete"
GIB = 2**30
# The vm_state nova launches a server in, and the state the collector's create.end books.
LAUNCHED_STATE = "active"


class ListingInvalid(ValueError):
    """A listed item that cannot be observed; the whole type becomes incomplete."""


def instance_in_transition(vm_state: object, task_state: object) -> bool:
    """Any nova task state is an operation in flight; vm_state building is an instance never active."""
    return task_state not in (None, "") or vm_state == "building"


def volume_in_transition(status: object) -> bool:
    """One of cinder's twelve in-flight statuses; a status cinder does not define is not a transition."""
    return status in VOLUME_TRANSITIONAL


def loadbalancer_in_transition(provisioning_status: object) -> bool:
    """Octavia's PENDING_CREATE, PENDING_UPDATE and PENDING_DELETE."""
    return isinstance(provisioning_status, str) and provisioning_status.startswith("PENDING_")


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _changed(doc: Mapping[str, Any], updated: str, created: str) -> tuple[Any, Any]:
    created_at = parse_platform_instant(doc.get(created))
    return created_at, parse_platform_instant(doc.get(updated)) or created_at


def instance_state(vm_state: object) -> str:
    """Tally's state of an instance: the collector's normalisation of nova's vm_state."""
    text = str(vm_state or "")
    return VM_STATES.get(text, text)


def instance_size(flavor: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """vcpus, ram_gb, disk_gb (root + ephemeral) and flavor name, from an embedded or listed flavor."""
    if not flavor:
        return None
    try:
        name = flavor.get("original_name") or flavor.get("name")
        ephemeral = flavor.get("ephemeral", flavor.get("OS-FLV-EXT-DATA:ephemeral", 0)) or 0
        return {
            "vcpus": int(flavor["vcpus"]),
            "ram_gb": _number(int(flavor["ram"]) / 1024),
            "disk_gb": _number(int(flavor.get("disk") or 0) + int(ephemeral)),
            "flavor": str(name),
        }
    except (KeyError, TypeError, ValueError):
        return None


def _server_size(
    doc: Mapping[str, Any], flavors: Mapping[str, Mapping[str, Any]] | None
) -> dict[str, Any] | None:
    embedded = doc.get("flavor") or {}
    if "vcpus" in embedded or flavors is None:
        return instance_size(embedded if "vcpus" in embedded else None)
    return instance_size(flavors.get(str(embedded.get("id"))))


def launched_at(doc: Mapping[str, Any]) -> datetime | None:
    """When nova put a server in use (``OS-SRV-USG:launched_at``), None while it never launched."""
    return parse_platform_instant(doc.get("OS-SRV-USG:launched_at"))


def observe_server(
    doc: Mapping[str, Any], flavors: Mapping[str, Mapping[str, Any]] | None
) -> ObservedResource:
    """A live server. ``flavors`` None: the flavor is embedded (2.47+) or was not listed.

    Its creation instant is its launch when nova reports one, else its ``created`` (the API
    request): the collector books an instance at create.end, which nova sends at the launch.
    """
    created, changed_at = _changed(doc, "updated", "created")
    vm_state = doc.get("OS-EXT-STS:vm_state")
    return ObservedResource(
        "instance",
        str(doc["id"]),
        str(doc.get("tenant_id") or ""),
        instance_state(vm_state),
        _server_size(doc, flavors),
        launched_at(doc) or created,
        changed_at,
        instance_in_transition(vm_state, doc.get("OS-EXT-STS:task_state")),
        created_state=LAUNCHED_STATE,
    )


def is_soft_deleted(doc: Mapping[str, Any]) -> bool:
    """Whether a server of nova's deleted listing is only soft-deleted: restorable, so not gone."""
    return doc.get("OS-EXT-STS:vm_state") == SOFT_DELETED_VM_STATE


def observe_deleted_server(
    doc: Mapping[str, Any], flavors: Mapping[str, Mapping[str, Any]] | None
) -> DeletedResource:
    """A server nova's deleted listing names, at the terminated_at it reports, with its launch, the
    flavor and project it ended with, and active (the state nova launches a server in) when it was
    launched: what a whole life the bus missed is booked with."""
    at = parse_platform_instant(doc.get("OS-SRV-USG:terminated_at")) or parse_platform_instant(
        doc.get("updated")
    )
    if at is None:
        raise ListingInvalid(f"deleted server {doc.get('id')} reports no terminated_at")
    launch = launched_at(doc)
    return DeletedResource(
        "instance",
        str(doc["id"]),
        str(doc.get("tenant_id") or ""),
        at,
        created_at=launch,
        state=LAUNCHED_STATE if launch is not None else None,
        size=_server_size(doc, flavors),
    )


def observe_volume(doc: Mapping[str, Any]) -> ObservedResource:
    created_at, changed_at = _changed(doc, "updated_at", "created_at")
    size: dict[str, Any] = {"size_gb": doc.get("size")}
    if doc.get("volume_type") is not None:
        size["type"] = doc["volume_type"]
    status = doc.get("status")
    return ObservedResource(
        "volume",
        str(doc["id"]),
        str(doc.get("os-vol-tenant-attr:tenant_id") or ""),
        str(status or ""),
        size,
        created_at,
        changed_at,
        volume_in_transition(status),
        created_state="available",
    )


def ip_version(address: object) -> int:
    """4 or 6 from the address; a missing or unparseable one counts as 4, as the collector counts it."""
    try:
        return ipaddress.ip_address(str(address)).version
    except ValueError:
        return 4


def observe_floating_ip(doc: Mapping[str, Any]) -> ObservedResource:
    created_at, changed_at = _changed(doc, "updated_at", "created_at")
    return ObservedResource(
        "floating_ip",
        str(doc["id"]),
        str(doc.get("project_id") or doc.get("tenant_id") or ""),
        "active",
        {"ip_version": ip_version(doc.get("floating_ip_address"))},
        created_at,
        changed_at,
    )


def observe_image(doc: Mapping[str, Any]) -> ObservedResource:
    """A live image, deactivated ones included; one that names no owner cannot be booked to a project."""
    owner = doc.get("owner")
    if not owner:
        raise ListingInvalid(f"image {doc.get('id')} names no owner")
    created_at, changed_at = _changed(doc, "updated_at", "created_at")
    return ObservedResource(
        "image",
        str(doc["id"]),
        str(owner),
        "active",
        {"size_gb": _number((doc.get("size") or 0) / GIB)},
        created_at,
        changed_at,
    )


def observe_loadbalancer(doc: Mapping[str, Any]) -> ObservedResource | None:
    """A load balancer with its listener and pool counts; a DELETED one is not observed (None)."""
    status = doc.get("provisioning_status")
    if status == "DELETED":
        return None
    created_at, changed_at = _changed(doc, "updated_at", "created_at")
    return ObservedResource(
        "loadbalancer",
        str(doc["id"]),
        str(doc.get("project_id") or ""),
        "active",
        {"listeners": len(doc.get("listeners") or []), "pools": len(doc.get("pools") or [])},
        created_at,
        changed_at,
        loadbalancer_in_transition(status),
        created_size={"listeners": 0, "pools": 0},
    )


def volume_type_name(doc: Mapping[str, Any]) -> SizeNameEntry:
    """A cinder volume type: the id volume notifications carry, and the name the listings show."""
    try:
        return SizeNameEntry("volume", "type", str(doc["id"]), str(doc["name"]))
    except KeyError as exc:
        raise ListingInvalid(f"volume type {doc.get('id')} names no {exc.args[0]}") from exc
