"""Drive a plan's phase through openstacksdk, every operation of the phase at once.

Each operation is a generator: it sends its requests and yields what must hold before it goes on (a
server in VERIFY_RESIZE before the confirm, a volume ``available`` after an extend); ``run_all``
advances every one of them in turn until all are done, so a phase costs about as long as its slowest
operation. Nothing here is the oracle: what the services recorded is read afterwards
(``scenario_oracle``); only the floating IP deletes keep instants, neutron's own answers around the
delete (neutron keeps no deleted row to read later).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import openstack.exceptions
from realcloud_support import Tenant

Wait = Callable[[], bool]
Op = Iterator[Wait]
OP_TIMEOUT_S = 180.0
# The development cloud caps each service's database pool at 3 connections: ten server creates at once
# timed placement out (NoValidHost); six operations in flight, the kinds interleaved, never did.
IN_FLIGHT = 6


def now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Workload:
    """The tenant's resources by plan name, and what the services answered around deletes."""

    tenant: Tenant
    flavors: tuple[tuple[str, str], tuple[str, str]]  # (id, name): the create flavor, the resize one
    ids: dict[str, str] = field(default_factory=dict)
    ip_deleted: dict[str, tuple[datetime, datetime]] = field(default_factory=dict)

    @property
    def conn(self) -> Any:
        return self.tenant.conn

    def _server_status(self, name: str) -> str:
        return str(self.conn.compute.get_server(self.ids[name]).status)

    def _server_is(self, name: str, *statuses: str) -> Wait:
        def check() -> bool:
            status = self._server_status(name)
            if status == "ERROR":
                raise AssertionError(f"server {name} went to ERROR")
            return status in statuses

        return check

    def _gone(self, get: Callable[[str], Any], rid: str) -> Wait:
        def check() -> bool:
            try:
                get(rid)
            except openstack.exceptions.NotFoundException:
                return True
            return False

        return check

    def _volume_is(self, name: str, status: str, **attrs: Any) -> Wait:
        def check() -> bool:
            volume = self.conn.block_storage.get_volume(self.ids[name])
            if volume.status in ("error", "error_extending"):
                raise AssertionError(f"volume {name} went to {volume.status}")
            return bool(volume.status == status and all(getattr(volume, k) == v for k, v in attrs.items()))

        return check

    def _lb_active(self, name: str) -> Wait:
        return lambda: (
            self.conn.load_balancer.get_load_balancer(self.ids[name]).provisioning_status == "ACTIVE"
        )

    # -- creates ------------------------------------------------------------------------------------

    def create(self, kind: str, name: str, volume_type: str = "") -> Op:
        if kind == "server":
            server = self.conn.compute.create_server(
                name=name,
                flavor_id=self.flavors[0][0],
                image_id=self.tenant.resources["image_id"],
                networks="none",
            )
            self.ids[name] = str(server.id)
            yield self._server_is(name, "ACTIVE")
        elif kind == "volume":
            self.ids[name] = str(
                self.conn.block_storage.create_volume(name=name, size=1, volume_type=volume_type).id
            )
            yield self._volume_is(name, "available")
        elif kind == "ip":
            self.ids[name] = str(
                self.conn.network.create_ip(floating_network_id=self.tenant.resources["network_id"]).id
            )
        elif kind == "image":
            # Queued, no data: the upload is an operation of a later phase.
            self.ids[name] = str(
                self.conn.image.create_image(
                    name=name, disk_format="raw", container_format="bare", allow_duplicates=True
                ).id
            )
        elif kind == "lb":
            lb = self.conn.load_balancer.create_load_balancer(
                name=name, vip_subnet_id=self.tenant.resources["subnet_id"]
            )
            self.ids[name] = str(lb.id)
            yield self._lb_active(name)
        else:
            raise ValueError(f"unknown kind {kind!r}")

    # -- operations ---------------------------------------------------------------------------------

    def operate(self, kind: str, name: str, op: str, anchor: str) -> Op:
        rid = self.ids[name]
        compute, volumes = self.conn.compute, self.conn.block_storage
        if kind == "server":
            yield from self._server_op(name, rid, op)
        elif kind == "volume" and op == "extend":
            size = volumes.get_volume(rid).size
            volumes.extend_volume(rid, size + 1)
            yield self._volume_is(name, "available", size=size + 1)
        elif kind == "volume" and op == "retype":
            to = "tier-a" if volumes.get_volume(rid).volume_type == "tier-b" else "tier-b"
            volumes.retype_volume(rid, to)
            yield self._volume_is(name, "available", volume_type=to)
        elif kind == "volume" and op == "attach":
            compute.create_volume_attachment(self.ids[anchor], volume_id=rid)
            yield self._volume_is(name, "in-use")
        elif kind == "volume" and op == "detach":
            compute.delete_volume_attachment(self.ids[anchor], rid)
            yield self._volume_is(name, "available")
        elif kind == "volume" and op == "delete":
            volumes.delete_volume(rid)
            yield self._gone(volumes.get_volume, rid)
        elif kind == "ip" and op == "delete":
            yield from self._ip_delete(rid)
        elif kind == "image":
            yield from self._image_op(rid, op)
        elif kind == "lb":
            yield from self._lb_op(name, rid, op)
        else:
            raise ValueError(f"unknown operation {op!r} of {kind}")

    def _server_op(self, name: str, rid: str, op: str) -> Op:
        compute = self.conn.compute
        if op in ("resize-confirm", "resize-revert"):
            small = compute.get_server(rid).flavor.original_name == self.flavors[0][1]
            compute.resize_server(rid, self.flavors[1][0] if small else self.flavors[0][0])
            yield self._server_is(name, "VERIFY_RESIZE")
            (compute.confirm_server_resize if op == "resize-confirm" else compute.revert_server_resize)(rid)
            yield self._server_is(name, "ACTIVE")
        elif op in ("stop", "start", "shelve", "unshelve"):
            getattr(compute, f"{op}_server")(rid)
            target = {"stop": "SHUTOFF", "shelve": "SHELVED_OFFLOADED"}.get(op, "ACTIVE")
            yield self._server_is(name, target)
        elif op == "delete":
            compute.delete_server(rid)
            yield self._gone(compute.get_server, rid)
        else:
            raise ValueError(f"unknown server operation {op!r}")

    def _ip_delete(self, rid: str) -> Op:
        admin = self.tenant.admin.network
        admin.get_ip(rid)  # neutron still answers with the address
        before = now()
        self.conn.network.delete_ip(rid)
        yield self._gone(admin.get_ip, rid)
        self.ip_deleted[rid] = (before, now())

    def _image_op(self, rid: str, op: str) -> Op:
        images = self.conn.image
        if op == "upload":
            images.get_image(rid).upload(images, data=b"scenario image\n" * 64)
            yield lambda: images.get_image(rid).status == "active"
        elif op in ("deactivate", "reactivate"):
            getattr(images, f"{op}_image")(rid)
            yield lambda: images.get_image(rid).status == ("deactivated" if op == "deactivate" else "active")
        elif op == "delete":
            images.delete_image(rid)
            yield self._gone(images.get_image, rid)
        else:
            raise ValueError(f"unknown image operation {op!r}")

    def _lb_op(self, name: str, rid: str, op: str) -> Op:
        lbs = self.conn.load_balancer
        if op == "listener":
            lbs.create_listener(name=f"{name}-http", loadbalancer_id=rid, protocol="HTTP", protocol_port=80)
        elif op == "pool":
            lbs.create_pool(
                name=f"{name}-pool", loadbalancer_id=rid, protocol="HTTP", lb_algorithm="ROUND_ROBIN"
            )
        elif op == "delete":
            lbs.delete_load_balancer(rid, cascade=True)
            yield self._gone(lbs.get_load_balancer, rid)
            return
        else:
            raise ValueError(f"unknown load balancer operation {op!r}")
        yield self._lb_active(name)


def run_all(
    ops: list[Op],
    timeout_s: float = OP_TIMEOUT_S,
    between: Callable[[], None] | None = None,
    limit: int = IN_FLIGHT,
) -> None:
    """Advance every operation until all are done, at most ``limit`` at once; ``between`` runs once,
    after the first requests of the first ``limit``."""
    waiting = list(ops)
    pending: list[tuple[Op, Wait]] = []
    deadline = time.monotonic() + timeout_s
    while waiting or pending:
        if time.monotonic() > deadline:
            raise AssertionError(f"{len(pending) + len(waiting)} operations not done within {timeout_s:g}s")
        still: list[tuple[Op, Wait]] = []
        for op, wait in pending:
            if not wait():
                still.append((op, wait))
            elif (step := next(op, None)) is not None:
                still.append((op, step))
        while waiting and len(still) < limit:
            op = waiting.pop(0)
            if (step := next(op, None)) is not None:
                still.append((op, step))
        if between is not None:
            between()
            between = None
        pending = still
        if pending:
            time.sleep(0.5)
