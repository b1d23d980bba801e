"""The month under construction: world drafts plus the notifications each transition publishes.

Every lifecycle helper here does two things at once, so they cannot drift apart:
it changes the resource's timeline in the world (with the platform's transitional
span) and it records the notifications the services publish for that change,
the booked ``.end`` at exactly the instant the world's facts change.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .._streams import draw_uuid, jitter
from ..notifications import BILLABLE_TYPES, Notification
from ..world import Draft, Flavor, VolumeType, WorldBuilder, WorldProject

SECOND = timedelta(seconds=1)


@dataclass
class Tenant:
    project: WorldProject
    user_id: str
    workload: str
    ids: random.Random


@dataclass
class Handle:
    """A resource being built: its draft, owner and the notifications' host."""

    draft: Draft
    tenant: Tenant
    host: str = ""
    volumes: list[Handle] = field(default_factory=list)
    fip: Handle | None = None
    alive: bool = True

    @property
    def rid(self) -> str:
        return self.draft.resource_id

    @property
    def project_id(self) -> str:
        return self.draft.current.project_id


class Recorder:
    """Collects drafts, their workloads and the notifications of one month."""

    def __init__(
        self, builder: WorldBuilder, flavors: dict[str, Flavor], vtypes: dict[str, VolumeType]
    ) -> None:
        self.builder = builder
        self.flavors = flavors
        self.vtypes = vtypes
        self.notifications: list[Notification] = []
        self.workload: dict[str, str] = {}
        self.hosts: dict[str, str] = {}
        self._seq = 0

    # -- notifications ---------------------------------------------------------------------------

    def emit(
        self,
        at: datetime,
        event_type: str,
        service: str,
        tenant: Tenant | None,
        *,
        resource_id: str = "",
        state: str = "",
        host: str = "",
        extra: tuple[object, ...] = (),
        project_id: str = "",
        user_id: str = "",
    ) -> None:
        self._seq += 1
        self.notifications.append(
            Notification(
                timestamp=at,
                event_type=event_type,
                service=service,
                project_id=project_id or (tenant.project.id if tenant else ""),
                user_id=user_id or (tenant.user_id if tenant else ""),
                resource_id=resource_id,
                state=state,
                billable=event_type in BILLABLE_TYPES,
                seq=self._seq,
                host=host,
                extra=extra,
                published_at=at,
            )
        )

    def _nova(self, h: Handle, at: datetime, event_type: str, state: str, *extra: object) -> None:
        self.emit(at, event_type, "nova", h.tenant, resource_id=h.rid, state=state, host=h.host, extra=extra)

    # -- instances -------------------------------------------------------------------------------

    def boot(
        self, tenant: Tenant, flavor: str, at: datetime, name: str, host: str, rng: random.Random
    ) -> Handle:
        build = jitter(rng, 20, 90)
        draft = self.builder.instance(
            tenant.project,
            self.flavors[flavor],
            created_at=at,
            building=build,
            name=name,
            resource_id=draw_uuid(tenant.ids),
            user_id=tenant.user_id,
        )
        h = Handle(draft, tenant, host)
        self.workload[h.rid] = tenant.workload
        self.hosts[h.rid] = host
        self.emit(at + SECOND, "scheduler.select_destinations.start", "scheduler", tenant, resource_id=h.rid)
        self.emit(
            at + 2 * SECOND, "scheduler.select_destinations.end", "scheduler", tenant, resource_id=h.rid
        )
        self._nova(h, at + 3 * SECOND, "compute.instance.create.start", "building", "spawning")
        port = draw_uuid(tenant.ids)
        self.emit(at + 5 * SECOND, "port.create.start", "neutron", tenant, resource_id=port)
        self.emit(at + 6 * SECOND, "port.create.end", "neutron", tenant, resource_id=port)
        self.emit(at + 8 * SECOND, "port.update.end", "neutron", tenant, resource_id=port)
        self._nova(h, at + build, "compute.instance.create.end", "active")
        return h

    def _nova_operation(
        self,
        h: Handle,
        at: datetime,
        rng: random.Random,
        operation: str,
        seconds: tuple[int, int],
        task: str,
        vm_state: tuple[str, str],
        state: str,
    ) -> datetime:
        """One nova operation whose start and end bracket a transitional span ending in ``state``;
        ``vm_state`` is what nova reports before and after."""
        done = at + jitter(rng, *seconds)
        h.draft.transition(at, done, task, state=state)
        self._nova(h, at, f"compute.instance.{operation}.start", vm_state[0], task)
        self._nova(h, done, f"compute.instance.{operation}.end", vm_state[1])
        return done

    def power_off(self, h: Handle, at: datetime, rng: random.Random) -> datetime:
        return self._nova_operation(
            h, at, rng, "power_off", (5, 30), "powering-off", ("active", "stopped"), "shutoff"
        )

    def power_on(self, h: Handle, at: datetime, rng: random.Random) -> datetime:
        return self._nova_operation(
            h, at, rng, "power_on", (5, 30), "powering-on", ("stopped", "active"), "active"
        )

    def soft_delete(self, h: Handle, at: datetime, rng: random.Random) -> datetime:
        """A delete under nova's reclaim_instance_interval: the server rests restorable in soft-delete."""
        return self._nova_operation(
            h, at, rng, "soft_delete", (3, 20), "soft-deleting", ("active", "soft-delete"), "soft_deleted"
        )

    def restore(self, h: Handle, at: datetime, rng: random.Random) -> datetime:
        """The owner's restore of a soft-deleted server: the same server, active again, one history."""
        return self._nova_operation(
            h, at, rng, "restore", (5, 30), "restoring", ("soft-delete", "active"), "active"
        )

    def resize(self, h: Handle, at: datetime, flavor: str, rng: random.Random) -> datetime:
        new = self.flavors[flavor]
        migrated = at + jitter(rng, 30, 120)
        confirmed = migrated + jitter(rng, 60, 3600)
        self._nova(h, at, "compute.instance.resize.prep.start", "active", "resize_prep", new.id)
        self._nova(h, at + SECOND, "compute.instance.resize.prep.end", "active", "resize_prep", new.id)
        h.draft.change(at, transition="resize_migrating")
        self._nova(h, at + 2 * SECOND, "compute.instance.resize.start", "active", "resize_migrating")
        # The source host's resize.end still carries the old flavor; the mapping skips it.
        self._nova(h, migrated - SECOND, "compute.instance.resize.end", "active", "resize_migrated")
        self._nova(h, migrated - SECOND, "compute.instance.finish_resize.start", "active", "resize_finish")
        h.draft.change(migrated, flavor_id=new.id)
        self._nova(h, migrated, "compute.instance.finish_resize.end", "resized")
        h.draft.change(confirmed - SECOND, transition="resize_confirming")
        self._nova(
            h, confirmed - SECOND, "compute.instance.resize.confirm.start", "resized", "resize_confirming"
        )
        h.draft.change(confirmed)
        self._nova(h, confirmed, "compute.instance.resize.confirm.end", "active")
        return confirmed

    def shelve(self, h: Handle, at: datetime, rng: random.Random) -> datetime:
        shelved = at + jitter(rng, 20, 60)
        offloaded = shelved + jitter(rng, 5, 30)
        h.draft.change(at, transition="shelving")
        self._nova(h, at, "compute.instance.shelve.start", "active", "shelving")
        h.draft.change(shelved, transition="shelving_offloading")
        self._nova(h, shelved, "compute.instance.shelve.end", "shelved", "shelving_offloading")
        self._nova(
            h, shelved + SECOND, "compute.instance.shelve_offload.start", "shelved", "shelving_offloading"
        )
        h.draft.change(offloaded, state="shelved")
        self._nova(h, offloaded, "compute.instance.shelve_offload.end", "shelved_offloaded")
        return offloaded

    def unshelve(self, h: Handle, at: datetime, rng: random.Random) -> datetime:
        return self._nova_operation(
            h, at, rng, "unshelve", (30, 90), "unshelving", ("shelved_offloaded", "active"), "active"
        )

    def delete_instance(self, h: Handle, at: datetime, rng: random.Random) -> datetime:
        done = at + jitter(rng, 3, 20)
        state = {"active": "active", "shutoff": "stopped", "shelved": "shelved_offloaded"}[
            h.draft.current.state
        ]
        h.draft.change(at, transition="deleting")
        self._nova(h, at, "compute.instance.delete.start", state, "deleting")
        # Nova detaches the server's volumes as it deletes it: cinder has them available again.
        for vol in h.volumes:
            if vol.alive:
                self.detach(vol, at + SECOND)
        self._nova(h, at + SECOND, "compute.instance.shutdown.start", state, "deleting")
        self._nova(h, at + 2 * SECOND, "compute.instance.shutdown.end", state, "deleting")
        port = draw_uuid(h.tenant.ids)
        self.emit(at + 2 * SECOND, "port.delete.start", "neutron", h.tenant, resource_id=port)
        self.emit(at + 3 * SECOND, "port.delete.end", "neutron", h.tenant, resource_id=port)
        h.draft.terminate(done)
        h.alive = False
        self._nova(h, done, "compute.instance.delete.end", "deleted")
        return done

    # -- volumes ---------------------------------------------------------------------------------

    def volume(
        self, tenant: Tenant, size_gb: int, vtype: str, at: datetime, name: str, rng: random.Random
    ) -> Handle:
        done = at + jitter(rng, 2, 15)
        draft = self.builder.volume(
            tenant.project,
            self.vtypes[vtype],
            size_gb=size_gb,
            created_at=at,
            transition="creating",
            name=name,
            resource_id=draw_uuid(tenant.ids),
            user_id=tenant.user_id,
        )
        h = Handle(draft, tenant)
        self.workload[h.rid] = tenant.workload
        self.emit(at, "volume.create.start", "cinder", tenant, resource_id=h.rid, state="creating")
        draft.change(done)
        self.emit(done, "volume.create.end", "cinder", tenant, resource_id=h.rid, state="available")
        return h

    def attach(self, v: Handle, server: Handle, at: datetime) -> None:
        # Cinder rests an attached volume in-use (the state the attach.end books and the listing shows).
        v.draft.transition(at, at + 3 * SECOND, "attaching", attached_to=server.rid, state="in-use")
        self.emit(at, "volume.attach.start", "cinder", v.tenant, resource_id=v.rid, state="attaching")
        self.emit(at + 3 * SECOND, "volume.attach.end", "cinder", v.tenant, resource_id=v.rid, state="in-use")
        self._nova(server, at + 3 * SECOND, "compute.instance.volume.attach", server.draft.current.state)

    def detach(self, v: Handle, at: datetime) -> datetime:
        if v.draft.current.attached_to is None:
            return at
        v.draft.transition(at, at + 3 * SECOND, "detaching", attached_to=None, state="available")
        self.emit(at, "volume.detach.start", "cinder", v.tenant, resource_id=v.rid, state="detaching")
        self.emit(
            at + 3 * SECOND, "volume.detach.end", "cinder", v.tenant, resource_id=v.rid, state="available"
        )
        return at + 4 * SECOND

    def extend(self, v: Handle, at: datetime, size_gb: int, rng: random.Random) -> datetime:
        done = at + jitter(rng, 5, 40)
        v.draft.transition(at, done, "extending", size_gb=size_gb)
        self.emit(at, "volume.resize.start", "cinder", v.tenant, resource_id=v.rid, state="extending")
        self.emit(
            done, "volume.resize.end", "cinder", v.tenant, resource_id=v.rid, state=v.draft.current.state
        )
        return done

    def retype(self, v: Handle, at: datetime, vtype: str, rng: random.Random) -> datetime:
        done = at + jitter(rng, 10, 120)
        v.draft.transition(at, done, "retyping", volume_type_id=self.vtypes[vtype].id)
        self.emit(done, "volume.retype", "cinder", v.tenant, resource_id=v.rid, state=v.draft.current.state)
        return done

    def transfer(
        self, v: Handle, to: Tenant, at: datetime, rng: random.Random, *, accepted: bool
    ) -> datetime:
        """The owner offers ``v`` to ``to``: cinder rests it in ``awaiting-transfer`` until ``to``
        accepts (the new owner's, available) or the owner cancels (still the owner's, available).

        The notifications are cinder's, and only ``volume.transfer.accept.end`` is booked: the offer
        and a cancel reach the record through a sync's poll. Returns the instant the volume is
        available again.
        """
        offered = at + SECOND
        done = at + jitter(rng, 60, 1800)
        self.emit(
            at, "volume.transfer.create.start", "cinder", v.tenant, resource_id=v.rid, state="available"
        )
        v.draft.change(offered, state="awaiting-transfer")
        # Cinder sends both create notifications with the volume it read before the status change.
        self.emit(
            offered, "volume.transfer.create.end", "cinder", v.tenant, resource_id=v.rid, state="available"
        )
        if not accepted:
            self.emit(
                done - SECOND,
                "volume.transfer.delete.start",
                "cinder",
                v.tenant,
                resource_id=v.rid,
                state="awaiting-transfer",
            )
            v.draft.change(done, state="available")
            # Likewise the cancel: read before the transfer is destroyed and the status restored.
            self.emit(
                done,
                "volume.transfer.delete.end",
                "cinder",
                v.tenant,
                resource_id=v.rid,
                state="awaiting-transfer",
            )
            return done
        self.emit(
            done - SECOND,
            "volume.transfer.accept.start",
            "cinder",
            to,
            resource_id=v.rid,
            state="awaiting-transfer",
        )
        v.draft.change(done, state="available", project_id=to.project.id)
        v.tenant = to
        # The end is sent with the volume read again: the new owner's, available.
        self.emit(done, "volume.transfer.accept.end", "cinder", to, resource_id=v.rid, state="available")
        return done

    def delete_volume(self, v: Handle, at: datetime, rng: random.Random) -> datetime:
        at = self.detach(v, at)
        done = at + jitter(rng, 2, 20)
        v.draft.change(at, transition="deleting")
        self.emit(at, "volume.delete.start", "cinder", v.tenant, resource_id=v.rid, state="deleting")
        v.draft.terminate(done)
        v.alive = False
        self.emit(done, "volume.delete.end", "cinder", v.tenant, resource_id=v.rid, state="deleted")
        return done

    # -- floating IPs ----------------------------------------------------------------------------

    def floating_ip(self, tenant: Tenant, address: str, at: datetime, target: Handle | None) -> Handle:
        draft = self.builder.floating_ip(
            tenant.project,
            address=address,
            created_at=at,
            name=address,
            resource_id=draw_uuid(tenant.ids),
            user_id=tenant.user_id,
        )
        h = Handle(draft, tenant)
        self.workload[h.rid] = tenant.workload
        self.emit(at - SECOND, "floatingip.create.start", "neutron", tenant, resource_id=h.rid)
        self.emit(at, "floatingip.create.end", "neutron", tenant, resource_id=h.rid)
        if target is not None:
            draft.change(at + 5 * SECOND, attached_to=target.rid)
            self.emit(at + 5 * SECOND, "floatingip.update.start", "neutron", tenant, resource_id=h.rid)
            self.emit(at + 6 * SECOND, "floatingip.update.end", "neutron", tenant, resource_id=h.rid)
            target.fip = h
        return h

    def release(self, f: Handle, at: datetime) -> datetime:
        self.emit(at - SECOND, "floatingip.delete.start", "neutron", f.tenant, resource_id=f.rid)
        f.draft.terminate(at)
        f.alive = False
        self.emit(at, "floatingip.delete.end", "neutron", f.tenant, resource_id=f.rid)
        return at

    # -- images ----------------------------------------------------------------------------------

    def image(self, tenant: Tenant, size_bytes: int, at: datetime, name: str, rng: random.Random) -> Handle:
        """Glance's create (queued, no data: booked at size 0), then the upload that gives it its size."""
        uploaded = at + jitter(rng, 30, 120)
        draft = self.builder.image(
            tenant.project,
            size_bytes=None,
            created_at=at,
            transition="queued",
            name=name,
            resource_id=draw_uuid(tenant.ids),
            user_id=tenant.user_id,
        )
        h = Handle(draft, tenant)
        self.workload[h.rid] = tenant.workload
        self.emit(at, "image.create", "glance", tenant, resource_id=h.rid, state="queued")
        draft.change(uploaded - 5 * SECOND, transition="saving")
        self.emit(uploaded - 5 * SECOND, "image.prepare", "glance", tenant, resource_id=h.rid, state="saving")
        draft.change(uploaded, size_bytes=size_bytes)
        self.emit(uploaded, "image.upload", "glance", tenant, resource_id=h.rid, state="active")
        self.emit(uploaded + SECOND, "image.activate", "glance", tenant, resource_id=h.rid, state="active")
        return h

    def delete_image(self, i: Handle, at: datetime) -> None:
        i.draft.terminate(at)
        i.alive = False
        self.emit(at, "image.delete", "glance", i.tenant, resource_id=i.rid, state="deleted")

    # -- load balancers --------------------------------------------------------------------------

    def loadbalancer(
        self,
        tenant: Tenant,
        at: datetime,
        name: str,
        listeners: int,
        pools: int,
        rng: random.Random,
        address: str,
    ) -> Handle:
        """create.end, then the balancer's floating IP, then update.end 1-5 min later."""
        created = at + jitter(rng, 60, 120)
        draft = self.builder.loadbalancer(
            tenant.project,
            created_at=at,
            transition="PENDING_CREATE",
            name=name,
            resource_id=draw_uuid(tenant.ids),
            user_id=tenant.user_id,
        )
        h = Handle(draft, tenant)
        self.workload[h.rid] = tenant.workload
        draft.change(created)
        self.emit(created, "octavia.loadbalancer.create.end", "octavia", tenant, resource_id=h.rid)
        h.fip = self.floating_ip(tenant, address, created + jitter(rng, 5, 20), None)
        updated = created + jitter(rng, 60, 300)
        # The listeners and pools exist only in the world; octavia's update.end names no counts.
        draft.transition(updated - 5 * SECOND, updated, "PENDING_UPDATE", listeners=listeners, pools=pools)
        self.emit(updated, "octavia.loadbalancer.update.end", "octavia", tenant, resource_id=h.rid)
        return h

    def add_listener(self, lb: Handle, at: datetime) -> None:
        current = lb.draft.current
        lb.draft.change(at, listeners=(current.listeners or 0) + 1, pools=(current.pools or 0) + 1)

    def delete_loadbalancer(self, lb: Handle, at: datetime, rng: random.Random) -> datetime:
        done = at + jitter(rng, 10, 60)
        lb.draft.change(at, transition="PENDING_DELETE")
        lb.draft.terminate(done)
        lb.alive = False
        self.emit(done, "octavia.loadbalancer.delete.end", "octavia", lb.tenant, resource_id=lb.rid)
        return done
