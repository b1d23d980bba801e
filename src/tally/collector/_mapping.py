"""Notification mapping: one oslo notification becomes one canonical event, or a skip. Pure.

The table below is the whole of the provider-specific knowledge: which oslo
types book something, under which Tally type, and how state and size are read
out of the payload. Mapping never raises. A payload of the wrong shape still
becomes an event (with the member it lacked left out or empty), because the
Reporting API is the one place that refuses and dead-letters it with a reason;
the collector only refuses what it cannot read at all.

Numbers are computed in exact decimal arithmetic (``ram_gb = memory_mb / 1024``,
``size_gb = bytes / 2**30``) and written as an ``int`` when integral, else as a
float: OpenStack's units give binary fractions, which a float holds exactly.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Context, Decimal
from typing import Any

from tally.core import deterministic_event_id, format_instant

from ._decode import decode_body
from ._json import dumps
from ._outcome import MapOutcome, Mapped, OsloNotification, Skipped, Unparseable

PLATFORM = "openstack"
MAX_EVENT_BYTES = 64 * 1024
# Wide enough that bytes / 2**30 (at most 30 fraction digits) is never rounded.
_EXACT = Context(prec=80)
_GIB = Decimal(2**30)
_MIB_PER_GIB = Decimal(1024)
# Beyond this a quantity is nonsense, and as a float it would overflow.
_HUGE = Decimal("1e300")

Payload = Mapping[str, Any]


def _number(value: object) -> Decimal | None:
    """A JSON number as a Decimal; booleans and everything else are not numbers."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        value = Decimal(repr(value))
    if isinstance(value, Decimal) and value.is_finite() and abs(value) < _HUGE:
        return value
    return None


def _plain(value: Decimal) -> int | float:
    if value == value.to_integral_value():
        return int(value)
    return float(value)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _sub(payload: Payload, member: str) -> Payload:
    value = payload.get(member)
    return value if isinstance(value, dict) else {}


# -- state rules --------------------------------------------------------------------------------------

_VM_STATES = {
    "stopped": "shutoff",
    "shelved_offloaded": "shelved",
    # A resize waiting for its confirm runs on the new flavor: billed as active.
    "resized": "active",
    "soft-delete": "soft_deleted",
}


def vm_state(payload: Payload) -> str:
    state = _text(payload.get("state"))
    return _VM_STATES.get(state, state)


def volume_status(payload: Payload) -> str:
    return _text(payload.get("status")) or "available"


def _fixed(state: str) -> Callable[[Payload], str]:
    return lambda _payload: state


# -- size rules ---------------------------------------------------------------------------------------


def instance_size(payload: Payload) -> dict[str, Any]:
    size: dict[str, Any] = {}
    vcpus = payload.get("vcpus")
    if isinstance(vcpus, int) and not isinstance(vcpus, bool):
        size["vcpus"] = vcpus
    memory = _number(payload.get("memory_mb"))
    if memory is not None:
        size["ram_gb"] = _plain(_EXACT.divide(memory, _MIB_PER_GIB))
    root, ephemeral = payload.get("root_gb"), payload.get("ephemeral_gb")
    if root is not None or ephemeral is not None:
        root_n = _number(root) if root is not None else Decimal(0)
        eph_n = _number(ephemeral) if ephemeral is not None else Decimal(0)
        if root_n is not None and eph_n is not None:
            size["disk_gb"] = _plain(_EXACT.add(root_n, eph_n))
    flavor = payload.get("instance_type")
    if isinstance(flavor, str):
        size["flavor"] = flavor
    return size


def volume_size(payload: Payload) -> dict[str, Any]:
    size: dict[str, Any] = {}
    gib = _number(payload.get("size"))
    if gib is not None:
        size["size_gb"] = _plain(gib)
    volume_type = payload.get("volume_type")
    if isinstance(volume_type, str):
        size["type"] = volume_type
    return size


def image_size(payload: Payload) -> dict[str, Any]:
    size_bytes = _number(payload.get("size"))
    if size_bytes is None:
        return {}
    return {"size_gb": _plain(_EXACT.divide(size_bytes, _GIB))}


def created_image_size(payload: Payload) -> dict[str, Any]:
    """Glance creates an image queued, its size null until the upload: the image exists, at 0 bytes."""
    if payload.get("size") is None:
        return {"size_gb": 0}
    return image_size(payload)


def floating_ip_size(payload: Payload) -> dict[str, Any]:
    address = _sub(payload, "floatingip").get("floating_ip_address")
    version = 4
    if isinstance(address, str):
        try:
            version = ipaddress.ip_address(address).version
        except ValueError:
            version = 4
    return {"ip_version": version}


def loadbalancer_size(payload: Payload) -> dict[str, Any]:
    size: dict[str, Any] = {}
    for member in ("listeners", "pools"):
        value = payload.get(member)
        if value is None:
            size[member] = 0
        elif isinstance(value, list):
            size[member] = len(value)
    return size


# -- id rules -----------------------------------------------------------------------------------------


def _path(*members: str) -> Callable[[Payload], str]:
    def read(payload: Payload) -> str:
        value: Any = payload
        for member in members:
            if not isinstance(value, dict):
                return ""
            value = value.get(member)
        return _text(value)

    return read


def _first(*readers: Callable[[Payload], str]) -> Callable[[Payload], str]:
    def read(payload: Payload) -> str:
        for reader in readers:
            value = reader(payload)
            if value:
                return value
        return ""

    return read


def _nothing(_payload: Payload) -> str:
    return ""


@dataclass(frozen=True, slots=True)
class Rule:
    """How one oslo type books: its Tally type, resource type and the readers of its payload."""

    event_type: str
    resource_type: str
    resource_id: Callable[[Payload], str]
    project_id: Callable[[Payload], str]
    state: Callable[[Payload], str] | None = None
    size: Callable[[Payload], dict[str, Any]] | None = None


_INSTANCE_ID, _TENANT = _path("instance_id"), _path("tenant_id")
_VOLUME_ID = _path("volume_id")
_LB_ID, _LB_PROJECT = _first(_path("loadbalancer_id"), _path("id")), _path("project_id")
_IMAGE_ID, _OWNER = _path("id"), _path("owner")


def _instance(event_type: str, state: Callable[[Payload], str] | None, sized: bool) -> Rule:
    return Rule(event_type, "instance", _INSTANCE_ID, _TENANT, state, instance_size if sized else None)


def _volume(event_type: str, state: Callable[[Payload], str] | None, sized: bool) -> Rule:
    return Rule(event_type, "volume", _VOLUME_ID, _TENANT, state, volume_size if sized else None)


def _lb(event_type: str, state: Callable[[Payload], str] | None, sized: bool) -> Rule:
    return Rule(event_type, "loadbalancer", _LB_ID, _LB_PROJECT, state, loadbalancer_size if sized else None)


RULES: Mapping[str, Rule] = {
    "compute.instance.create.end": _instance("compute.instance.create.end", vm_state, True),
    "compute.instance.delete.end": _instance("compute.instance.delete.end", None, False),
    # The destination host's finish carries the new flavor; the source's resize.end is skipped below.
    "compute.instance.finish_resize.end": _instance("compute.instance.resize.end", vm_state, True),
    "compute.instance.resize.confirm.end": _instance("compute.instance.resize.confirm.end", vm_state, True),
    "compute.instance.resize.revert.end": _instance("compute.instance.resize.revert.end", vm_state, True),
    "compute.instance.shelve_offload.end": _instance("compute.instance.shelve", _fixed("shelved"), False),
    "compute.instance.unshelve.end": _instance("compute.instance.unshelve", _fixed("active"), False),
    "compute.instance.power_off.end": _instance("compute.instance.power_off", _fixed("shutoff"), False),
    "compute.instance.power_on.end": _instance("compute.instance.power_on", _fixed("active"), False),
    # A delete with nova's reclaim_instance_interval set only soft-deletes: the server is restorable,
    # so it lives on in state soft_deleted until a restore (active again, one history) or nova's
    # reclaim, which sends compute.instance.delete.end at the instant it reclaims.
    "compute.instance.soft_delete.end": _instance(
        "compute.instance.soft_delete", _fixed("soft_deleted"), False
    ),
    "compute.instance.restore.end": _instance("compute.instance.restore", _fixed("active"), False),
    "volume.create.end": _volume("volume.create.end", _fixed("available"), True),
    "volume.delete.end": _volume("volume.delete.end", None, False),
    "volume.resize.end": _volume("volume.resize.end", volume_status, True),
    "volume.retype": _volume("volume.retype", volume_status, True),
    # The end payload is reloaded after the transfer, so tenant_id is the new owner.
    "volume.transfer.accept.end": _volume("volume.transfer.accept.end", volume_status, True),
    # Cinder rests an attached volume in-use and lists it so: the record follows its status (in-use,
    # or available once the last attachment is gone; a multi-attached volume stays in-use).
    "volume.attach.end": _volume("volume.attach.end", volume_status, False),
    "volume.detach.end": _volume("volume.detach.end", volume_status, False),
    "floatingip.create.end": Rule(
        "floatingip.create.end",
        "floating_ip",
        _path("floatingip", "id"),
        _first(_path("floatingip", "tenant_id"), _path("floatingip", "project_id")),
        _fixed("active"),
        floating_ip_size,
    ),
    # The delete names the owner only in the request context.
    "floatingip.delete.end": Rule(
        "floatingip.delete.end",
        "floating_ip",
        _first(_path("floatingip_id"), _path("floatingip", "id")),
        _nothing,
    ),
    # The upload is booked as a create too: on the image its create started it changes the size, and
    # when that create was missed it starts the image (docs/reconciliation.md, "When an image starts").
    "image.upload": Rule("image.create", "image", _IMAGE_ID, _OWNER, _fixed("active"), image_size),
    "image.create": Rule("image.create", "image", _IMAGE_ID, _OWNER, _fixed("active"), created_image_size),
    "image.delete": Rule("image.delete", "image", _IMAGE_ID, _OWNER),
    "octavia.loadbalancer.create.end": _lb("octavia.loadbalancer.create.end", _fixed("active"), True),
    # Octavia never sends listener or pool lists; a size here would reset counts a sync booked.
    "octavia.loadbalancer.update.end": _lb("octavia.loadbalancer.update.end", _fixed("active"), False),
    "octavia.loadbalancer.delete.end": _lb("octavia.loadbalancer.delete.end", None, False),
}

# Skipped on purpose, each with the reason counted in tally_collector_skipped_total.
SKIP_REASONS: Mapping[str, str] = {
    "compute.instance.resize.end": "resize_source_host",
}


def map_decoded(notification: OsloNotification, *, cloud: str) -> MapOutcome:
    """Map a decoded notification; see ``map_notification``."""
    oslo_type = notification.event_type
    rule = RULES.get(oslo_type)
    if rule is None:
        return Skipped(SKIP_REASONS.get(oslo_type, "unmapped"), oslo_type, notification.message_id)
    # Decoded JSON holds dicts; checking for dict rather than the Mapping ABC is a hot-path saving.
    payload: Payload = notification.payload if isinstance(notification.payload, dict) else {}
    resource_id = rule.resource_id(payload)
    project_id = rule.project_id(payload) or notification.context_owner
    event_payload: dict[str, Any] = {}
    if rule.state is not None:
        event_payload["state"] = rule.state(payload)
    if rule.size is not None:
        event_payload["size"] = rule.size(payload)
    event_payload["provider"] = {"oslo_event_type": oslo_type}
    event_id = notification.message_id or deterministic_event_id(
        PLATFORM, cloud, resource_id, rule.event_type, notification.timestamp
    )
    event = {
        "event_id": event_id,
        "timestamp": format_instant(notification.timestamp),
        "event_type": rule.event_type,
        "platform": PLATFORM,
        "cloud": cloud,
        "resource_type": rule.resource_type,
        "resource_id": resource_id,
        "project_id": project_id,
        "source": "collector",
        "payload": event_payload,
    }
    text = dumps(event)
    if len(text) > MAX_EVENT_BYTES:
        return Skipped("oversized_event", oslo_type, notification.message_id)
    return Mapped(event, oslo_type, text)


def map_notification(body: bytes | str | Mapping[str, Any], *, cloud: str) -> MapOutcome:
    """Map one notification body (the AMQP body, or its parsed JSON) to its canonical event.

    Pure and total: the same body and cloud give the same outcome on every run,
    and nothing raises. The simulator writes its expected events with this.
    """
    decoded = decode_body(body)
    if isinstance(decoded, Skipped | Unparseable):
        return decoded
    return map_decoded(decoded.notification, cloud=cloud)
