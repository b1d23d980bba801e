"""What a world may hold, and the checks that hold a world to it.

Per resource type: the canonical states a segment may carry, the platform's transition markers,
and the size facts it must carry (every other size fact is ``None``). :func:`check_resource`
holds one resource's timeline to these rules and to the world's projects, flavors and volume
types; a broken rule is a :class:`WorldError` naming the resource.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Final

from tally.core import format_instant

from ._model import RESOURCE_TYPES, Flavor, Resource, VolumeType, WorldProject

#: Canonical states a segment may carry, per type (the states Tally's mapping produces).
STATES: Final[Mapping[str, frozenset[str]]] = {
    "instance": frozenset({"active", "shutoff", "shelved", "paused", "suspended", "error", "soft_deleted"}),
    "volume": frozenset(
        {
            "available",
            "in-use",
            "error",
            "error_deleting",
            "error_managing",
            "error_restoring",
            "error_backing-up",
            "error_extending",
            "maintenance",
            "awaiting-transfer",
        }
    ),
    "floating_ip": frozenset({"active"}),
    "image": frozenset({"active", "deactivated"}),
    "loadbalancer": frozenset({"active", "error"}),
}

#: Transition markers a segment may carry, per type. ``building`` is nova's vm_state of an instance
#: that was never active; every other instance marker is a nova task_state. The volume markers are
#: cinder's twelve statuses of an operation in flight (seed 000). The image markers are glance
#: statuses shown before the data is active; they defer nothing and bill from the create on.
TRANSITIONS: Final[Mapping[str, frozenset[str]]] = {
    "instance": frozenset(
        {
            "building",
            "scheduling",
            "spawning",
            "networking",
            "block_device_mapping",
            "resize_prep",
            "resize_migrating",
            "resize_migrated",
            "resize_finish",
            "resize_reverting",
            "resize_confirming",
            "rebooting",
            "rebooting_hard",
            "powering-off",
            "powering-on",
            "pausing",
            "unpausing",
            "suspending",
            "resuming",
            "shelving",
            "shelving_offloading",
            "unshelving",
            "rebuilding",
            "migrating",
            "image_snapshot",
            "deleting",
            "soft-deleting",
            "restoring",
        }
    ),
    "volume": frozenset(
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
    ),
    "floating_ip": frozenset(),
    "image": frozenset({"queued", "saving", "uploading", "importing", "pending_delete"}),
    "loadbalancer": frozenset({"PENDING_CREATE", "PENDING_UPDATE", "PENDING_DELETE"}),
}

#: The size facts each type's segments must carry (other size facts must be ``None``).
SIZE_FACTS: Final[Mapping[str, tuple[str, ...]]] = {
    "instance": ("flavor_id",),
    "volume": ("size_gb", "volume_type_id"),
    "floating_ip": ("address",),
    "image": ("size_bytes",),
    "loadbalancer": ("listeners", "pools"),
}

ALL_SIZE_FACTS: Final = (
    "flavor_id",
    "size_gb",
    "volume_type_id",
    "address",
    "size_bytes",
    "listeners",
    "pools",
)


class WorldError(ValueError):
    """A world that cannot be served: the message names the resource and the broken rule."""


def check_project_id(pid: str) -> None:
    """Refuse a project id that is not keystone's 32 lower-case hex digits."""
    if len(pid) != 32 or any(c not in "0123456789abcdef" for c in pid):
        raise WorldError(f"project id {pid!r} is not 32 lower-case hex digits")


def check_resource(
    r: Resource,
    projects: Mapping[str, WorldProject],
    flavors: Mapping[str, Flavor],
    vtypes: Mapping[str, VolumeType],
) -> None:
    """Refuse a resource whose timeline breaks a rule, or names a part the world does not hold."""
    where = f"{r.resource_type} {r.resource_id}"
    if r.resource_type not in RESOURCE_TYPES:
        raise WorldError(f"{where}: unknown resource type")
    try:
        uuid.UUID(r.resource_id)
    except ValueError:
        raise WorldError(f"{where}: resource id is not a UUID") from None
    if not r.timeline:
        raise WorldError(f"{where}: empty timeline")
    if r.timeline[0].start != r.created_at:
        raise WorldError(f"{where}: first segment does not start at created_at")
    if r.timeline[-1].end != r.terminated_at:
        raise WorldError(f"{where}: last segment does not end at terminated_at")
    required = SIZE_FACTS[r.resource_type]
    for prev, seg in zip((None, *r.timeline[:-1]), r.timeline, strict=True):
        if prev is not None and prev.end != seg.start:
            raise WorldError(f"{where}: segments not contiguous at {format_instant(seg.start)}")
        if seg.end is not None and seg.end <= seg.start:
            raise WorldError(f"{where}: empty or reversed segment at {format_instant(seg.start)}")
        if seg.state not in STATES[r.resource_type]:
            raise WorldError(f"{where}: state {seg.state!r} is not one of {sorted(STATES[r.resource_type])}")
        if seg.transition is not None and seg.transition not in TRANSITIONS[r.resource_type]:
            raise WorldError(f"{where}: transition {seg.transition!r} is not one the platform shows")
        if seg.project_id not in projects:
            raise WorldError(f"{where}: project {seg.project_id} is not a project of the world")
        for name in ALL_SIZE_FACTS:
            value = getattr(seg, name)
            if name not in required and value is not None:
                raise WorldError(f"{where}: {name} does not apply to a {r.resource_type}")
        if r.resource_type == "instance" and seg.flavor_id not in flavors:
            raise WorldError(f"{where}: flavor {seg.flavor_id!r} is not a flavor of the world")
        if r.resource_type == "volume":
            if seg.volume_type_id not in vtypes:
                raise WorldError(f"{where}: volume type {seg.volume_type_id!r} is not a type of the world")
            if not isinstance(seg.size_gb, int) or seg.size_gb <= 0:
                raise WorldError(f"{where}: size_gb must be a positive integer")
        if r.resource_type == "floating_ip" and not seg.address:
            raise WorldError(f"{where}: a floating IP needs an address")
        if r.resource_type == "loadbalancer" and (
            not isinstance(seg.listeners, int)
            or not isinstance(seg.pools, int)
            or seg.listeners < 0
            or seg.pools < 0
        ):
            raise WorldError(f"{where}: listeners and pools must be counts")
    if r.resource_type == "image" and r.visibility not in ("public", "private", "shared", "community"):
        raise WorldError(f"{where}: visibility {r.visibility!r} is not one glance knows")
