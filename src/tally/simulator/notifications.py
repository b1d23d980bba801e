"""The oslo notifications of a simulated month: what each lifecycle transition publishes.

A :class:`Notification` is small: it names the transition (event type, instant,
resource, raw platform state) and renders its oslo v2 envelope on demand from the
world it belongs to, so a month of millions of notifications never holds millions
of payload dicts. Payloads follow the services' own shapes (nova's unversioned
``info_from_instance``, cinder's ``_usage_from_volume``, neutron's resource view,
glance's image view, octavia's provider dict), with the one simplification the
spec asks for: cinder payloads carry the volume type *name*.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

import orjson

from .world import Resource, Segment, World

#: Exchange each service publishes on (cinder uses oslo's default ``openstack``).
EXCHANGES: Final = {
    "nova": "nova",
    "scheduler": "nova",
    "neutron": "neutron",
    "cinder": "openstack",
    "glance": "glance",
    "octavia": "octavia",
    "keystone": "keystone",
    "designate": "designate",
    "barbican": "barbican",
}
ROUTING_KEY: Final = "notifications.info"

#: oslo types the collector books (the mapping's table); everything else the month sends is noise.
BILLABLE_TYPES: Final = frozenset(
    {
        "compute.instance.create.end",
        "compute.instance.delete.end",
        "compute.instance.finish_resize.end",
        "compute.instance.resize.confirm.end",
        "compute.instance.resize.revert.end",
        "compute.instance.shelve_offload.end",
        "compute.instance.unshelve.end",
        "compute.instance.power_off.end",
        "compute.instance.power_on.end",
        "compute.instance.soft_delete.end",
        "compute.instance.restore.end",
        "volume.create.end",
        "volume.delete.end",
        "volume.resize.end",
        "volume.retype",
        "volume.transfer.accept.end",
        "volume.attach.end",
        "volume.detach.end",
        "floatingip.create.end",
        "floatingip.delete.end",
        "image.upload",
        "image.create",
        "image.delete",
        "octavia.loadbalancer.create.end",
        "octavia.loadbalancer.update.end",
        "octavia.loadbalancer.delete.end",
    }
)

#: Tally's name for each booked oslo type, where it differs.
TALLY_TYPES: Final = {
    "compute.instance.finish_resize.end": "compute.instance.resize.end",
    "compute.instance.shelve_offload.end": "compute.instance.shelve",
    "compute.instance.unshelve.end": "compute.instance.unshelve",
    "compute.instance.power_off.end": "compute.instance.power_off",
    "compute.instance.power_on.end": "compute.instance.power_on",
    "compute.instance.soft_delete.end": "compute.instance.soft_delete",
    "compute.instance.restore.end": "compute.instance.restore",
    "image.upload": "image.create",
}

OVERSIZED_BYTES: Final = 1024 * 1024 + 4096

_SPACE_FORMAT = "%Y-%m-%d %H:%M:%S.%f"


def tally_type(oslo_type: str) -> str:
    return TALLY_TYPES.get(oslo_type, oslo_type)


def _nova_time(at: datetime | None) -> str:
    return "" if at is None else at.strftime("%Y-%m-%dT%H:%M:%S.%f")


def _derived(message_id: str, salt: str) -> str:
    return hashlib.sha256(f"{salt}/{message_id}".encode()).hexdigest()[:32]


@dataclass(slots=True, eq=False)
class Notification:
    """One notification of the month.

    ``service`` picks the exchange and payload shape; ``state`` is the raw platform state the payload
    states (nova vm_state, cinder status, glance status); ``billable`` is true when the collector books
    an event from it. ``published_at`` is the virtual instant the publisher sends it (``timestamp``
    unless a fault moved it); ``shape`` is ``""`` or the refused shape of a fault's twin.
    """

    timestamp: datetime
    event_type: str
    service: str
    project_id: str
    user_id: str
    resource_id: str
    state: str
    billable: bool
    seq: int
    host: str = ""
    extra: tuple[Any, ...] = ()
    published_at: datetime = field(default=datetime.min)
    message_id: str = ""
    shape: str = ""
    world: World | None = field(default=None, repr=False)

    @property
    def exchange(self) -> str:
        return EXCHANGES[self.service]

    @property
    def routing_key(self) -> str:
        return ROUTING_KEY

    def copy(self, **changes: Any) -> Notification:
        fields_ = {name: getattr(self, name) for name in self.__slots__}
        fields_.update(changes)
        return Notification(**fields_)

    def body(self) -> dict[str, Any] | str:
        """The AMQP body: the oslo v2 envelope, or the raw text of a truncated twin."""
        if self.shape == "truncated":
            whole = orjson.dumps(self._envelope(self._inner())).decode()
            return whole[: len(whole) // 2]
        return self._envelope(self._inner())

    def amqp_body(self) -> bytes:
        body = self.body()
        return body.encode() if isinstance(body, str) else orjson.dumps(body)

    def to_line(self) -> bytes:
        """One line of ``notifications.jsonl`` (without the newline)."""
        return orjson.dumps({"exchange": self.exchange, "routing_key": self.routing_key, "body": self.body()})

    @staticmethod
    def _envelope(inner: dict[str, Any]) -> dict[str, Any]:
        return {"oslo.version": "2.0", "oslo.message": orjson.dumps(inner).decode()}

    def _inner(self) -> dict[str, Any]:
        payload = self.payload()
        event_type = self.event_type
        if self.shape == "versioned":
            event_type = event_type.removeprefix("compute.")
            payload = {
                "nova_object.name": "InstanceActionPayload",
                "nova_object.namespace": "nova",
                "nova_object.version": "1.9",
                "nova_object.data": {"uuid": self.resource_id, "tenant_id": self.project_id},
            }
        inner: dict[str, Any] = {
            "message_id": self.message_id,
            "publisher_id": self._publisher(),
            "event_type": event_type,
            "priority": "INFO",
            "payload": payload,
            "timestamp": self.timestamp.strftime(_SPACE_FORMAT),
            "_context_project_id": self.project_id,
        }
        if self.service != "octavia":
            inner["_context_user_id"] = self.user_id
            inner["_context_request_id"] = "req-" + _derived(self.message_id, "request")
            inner["_context_is_admin"] = False
            inner["_context_roles"] = ["member", "reader"]
        if self.shape == "oversized":
            inner["_context_padding"] = "x" * OVERSIZED_BYTES
        inner["_unique_id"] = _derived(self.message_id, "unique")
        return inner

    def _publisher(self) -> str | None:
        return {
            "nova": f"compute.{self.host or 'compute-01'}",
            "scheduler": "scheduler.controller-01",
            "neutron": "network.controller-01",
            "cinder": "volume.storage-01@lvm",
            "glance": "image.localhost",
            "octavia": None,
            "keystone": "identity.controller-01",
            "designate": "central.controller-01",
            "barbican": "barbican.controller-01",
        }[self.service]

    # -- payloads ----------------------------------------------------------------------------------

    def _resource(self) -> tuple[Resource, Segment] | None:
        if self.world is None or not self.resource_id:
            return None
        resource = self.world.resource(self.resource_id)
        if resource is None:
            return None
        segment = resource.segment_at(self.timestamp)
        if segment is None:
            segment = resource.timeline[-1] if self.timestamp >= resource.created_at else resource.timeline[0]
        return resource, segment

    def payload(self) -> dict[str, Any]:
        found = self._resource()
        if found is None:
            return self._noise_payload()
        resource, segment = found
        kind = resource.resource_type
        if self.service == "nova" and kind == "instance":
            return self._nova(resource, segment)
        if self.service == "cinder" and kind == "volume":
            return self._cinder(resource, segment)
        if self.service == "neutron" and kind == "floating_ip":
            return self._floatingip(resource, segment)
        if self.service == "glance" and kind == "image":
            return self._glance(resource, segment)
        if self.service == "octavia" and kind == "loadbalancer":
            return self._octavia(resource, segment)
        return self._noise_payload()

    def _nova(self, r: Resource, seg: Segment) -> dict[str, Any]:
        assert self.world is not None
        flavor = self.world.flavor(seg.flavor_id or "")
        assert flavor is not None
        deleted = self.event_type == "compute.instance.delete.end"
        payload: dict[str, Any] = {
            "instance_id": r.resource_id,
            "tenant_id": seg.project_id,
            "user_id": r.user_id,
            "display_name": r.name,
            "hostname": r.name,
            "reservation_id": "r-" + r.resource_id[:8],
            "instance_type": flavor.name,
            "instance_type_id": int(flavor.id) if flavor.id.isdigit() else 0,
            "instance_flavor_id": flavor.id,
            "memory_mb": flavor.ram_mb,
            "vcpus": flavor.vcpus,
            "root_gb": flavor.disk_gb,
            "ephemeral_gb": flavor.ephemeral_gb,
            "disk_gb": flavor.disk_gb + flavor.ephemeral_gb,
            "state": self.state,
            "state_description": self.extra[0] if self.extra else "",
            "created_at": r.created_at.strftime("%Y-%m-%d %H:%M:%S+00:00"),
            "launched_at": _nova_time(r.launched_at),
            "terminated_at": _nova_time(r.terminated_at) if deleted else "",
            "deleted_at": _nova_time(r.terminated_at) if deleted else "",
            "host": self.host,
            "node": self.host,
            "availability_zone": "nova",
            "architecture": "x86_64",
            "os_type": "linux",
            "image_ref_url": "",
            "progress": "",
            "metadata": {},
        }
        if self.event_type == "compute.instance.create.end":
            payload["message"] = "Success"
        if self.event_type == "compute.instance.exists":
            day = self.timestamp.replace(hour=0, minute=0, second=0, microsecond=0)
            payload["audit_period_beginning"] = _nova_time(day - timedelta(days=1))
            payload["audit_period_ending"] = _nova_time(day)
            payload["bandwidth"] = {}
        if self.event_type.startswith("compute.instance.resize.prep") and len(self.extra) > 1:
            new = self.world.flavor(str(self.extra[1]))
            if new is not None:
                payload["new_instance_type"] = new.name
                payload["new_instance_type_id"] = int(new.id) if new.id.isdigit() else 0
        return payload

    def _cinder(self, r: Resource, seg: Segment) -> dict[str, Any]:
        # Cinder's notifications name the volume type by id (its ``_usage_from_volume`` reads
        # ``volume_type_id``) where its listing names it: the collector books the id, and the store
        # names it by the type listing.
        return {
            "volume_id": r.resource_id,
            "tenant_id": seg.project_id,
            "user_id": r.user_id,
            "size": seg.size_gb,
            "volume_type": seg.volume_type_id,
            "status": self.state,
            "display_name": r.name,
            "availability_zone": "nova",
            "host": "storage-01@lvm#lvm",
            "created_at": r.created_at.isoformat(),
            "launched_at": r.created_at.isoformat(),
            "snapshot_id": None,
            "metadata": [],
            "volume_attachment": [
                {"volume_id": r.resource_id, "instance_uuid": seg.attached_to, "attach_status": "attached"}
            ]
            if seg.attached_to
            else [],
        }

    def _floatingip(self, r: Resource, seg: Segment) -> dict[str, Any]:
        view = {
            "id": r.resource_id,
            "tenant_id": seg.project_id,
            "project_id": seg.project_id,
            "status": "ACTIVE" if seg.attached_to else "DOWN",
            "floating_ip_address": seg.address,
            "floating_network_id": "8d3a2f55-6b51-4c3e-9a4b-4f5e1a2b7c01",
            "router_id": None,
            "port_id": None,
            "fixed_ip_address": None,
            "description": "",
            "created_at": r.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        if self.event_type == "floatingip.delete.start":
            return {"floatingip_id": r.resource_id}
        if self.event_type == "floatingip.delete.end":
            return {"floatingip_id": r.resource_id, "floatingip": view}
        return {"floatingip": view}

    def _glance(self, r: Resource, seg: Segment) -> dict[str, Any]:
        deleted = self.event_type == "image.delete"
        return {
            "id": r.resource_id,
            "name": r.name,
            "owner": seg.project_id,
            "status": self.state,
            "size": seg.size_bytes,
            "virtual_size": None,
            "checksum": None if seg.size_bytes is None else _derived(r.resource_id, "checksum"),
            "disk_format": "qcow2",
            "container_format": "bare",
            "visibility": r.visibility,
            "is_public": r.visibility == "public",
            "protected": False,
            "min_disk": 0,
            "min_ram": 0,
            "created_at": r.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "updated_at": self.timestamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "deleted": deleted,
            "deleted_at": self.timestamp.strftime("%Y-%m-%dT%H:%M:%SZ") if deleted else None,
            "tags": [],
            "properties": {},
        }

    def _octavia(self, r: Resource, seg: Segment) -> dict[str, Any]:
        return {
            "loadbalancer_id": r.resource_id,
            "project_id": seg.project_id,
            "name": r.name,
            "description": "",
            "admin_state_up": True,
            "availability_zone": None,
            "vip_address": "10.0.0." + str(int(r.resource_id[:2], 16) % 250 + 2),
            "vip_network_id": _uuid_like(r.resource_id, "vip-network"),
            "vip_port_id": _uuid_like(r.resource_id, "vip-port"),
            "vip_subnet_id": _uuid_like(r.resource_id, "vip-subnet"),
            "vip_qos_policy_id": None,
        }

    def _noise_payload(self) -> dict[str, Any]:
        """Payloads of the never-billed types: the members their services send, ids derived."""
        rid = self.resource_id or _uuid_like(self.message_id, self.event_type)
        head = self.event_type.split(".")[0]
        if self.service == "keystone":
            return {
                "typeURI": "http://schemas.dmtf.org/cloud/audit/1.0/event",
                "eventType": "activity",
                "action": self.event_type.removeprefix("identity."),
                "outcome": "success",
                "initiator": {"id": self.user_id, "project_id": self.project_id},
                "target": {"id": rid},
            }
        if self.service == "scheduler":
            return {"request_spec": {"instance_uuids": [rid], "project_id": self.project_id}}
        if self.service == "neutron":
            return {head: {"id": rid, "tenant_id": self.project_id, "project_id": self.project_id}}
        if self.service == "nova":
            return {"instance_id": rid, "tenant_id": self.project_id, "user_id": self.user_id}
        if self.service == "cinder":
            return {"volume_id": rid, "tenant_id": self.project_id, "status": self.state}
        if self.service == "glance":
            return {"id": rid, "owner": self.project_id, "status": self.state}
        return {"id": rid, "project_id": self.project_id, "tenant_id": self.project_id}


def _uuid_like(source: str, salt: str) -> str:
    h = hashlib.sha256(f"{salt}/{source}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"
