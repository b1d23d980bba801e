"""Building a world by hand (tests, benchmarks, the month generator's recorder).

Each resource is a :class:`Draft` whose timeline grows change by change; :meth:`WorldBuilder.build`
builds every draft and checks the whole as :class:`World` does::

    b = WorldBuilder(cloud="os-sim", period_from=t0, period_to=t1)
    alpha = b.project("alpha")
    small = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    ssd = b.volume_type("ssd")
    vm = b.instance(alpha, small, created_at=t0 + h, building=timedelta(seconds=40))
    vm.change(t0 + 5 * h, state="shutoff")
    vm.change(t0 + 6 * h, transition="deleting")
    vm.terminate(t0 + 6 * h + timedelta(seconds=5))
    b.volume(alpha, ssd, size_gb=50, created_at=t0 + h)
    world = b.build()
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Final

from tally.core import as_utc, format_instant

from ._model import Flavor, Resource, ResourceType, Segment, VolumeType, WorldProject
from ._rules import WorldError
from ._world import World

_ID_NAMESPACE: Final = uuid.UUID("6f1d2c8e-4b7a-5e39-9a0c-3d5f7e1b2a64")


class Draft:
    """A resource under construction: its timeline grows with :meth:`change` and ends at :meth:`terminate`."""

    def __init__(
        self,
        resource_type: ResourceType,
        resource_id: str,
        name: str,
        first: Segment,
        user_id: str,
        visibility: str,
    ) -> None:
        self.resource_type = resource_type
        self.resource_id = resource_id
        self.name = name
        self.user_id = user_id
        self.visibility = visibility
        self.hidden = False
        self._segments: list[Segment] = [first]
        self._terminated_at: datetime | None = None

    @property
    def current(self) -> Segment:
        return self._segments[-1]

    def change(self, at: datetime, **facts: Any) -> Draft:
        """From ``at`` on, the facts given replace the current ones (``transition`` resets to ``None``
        unless given). Returns the draft, so changes chain."""
        if self._terminated_at is not None:
            raise WorldError(f"{self.resource_type} {self.resource_id}: change after termination")
        at = as_utc(at)
        current = self._segments[-1]
        if at < current.start:
            raise WorldError(
                f"{self.resource_type} {self.resource_id}: change at {format_instant(at)} "
                f"before the segment starting {format_instant(current.start)}"
            )
        facts.setdefault("transition", None)
        nxt = replace(current, start=at, end=None, **facts)
        if at == current.start:
            self._segments[-1] = nxt
        else:
            self._segments[-1] = replace(current, end=at)
            self._segments.append(nxt)
        return self

    def transition(self, at: datetime, until: datetime, marker: str, **after: Any) -> Draft:
        """A transitional span ``[at, until)`` showing ``marker``, then the facts ``after``."""
        self.change(at, transition=marker)
        return self.change(until, **after)

    def terminate(self, at: datetime) -> Draft:
        """The platform removed the resource at ``at``.

        A change opened at exactly ``at`` (``transition(..., until=at)`` before a delete) is dropped:
        the resource ends there instead of starting new facts.
        """
        at = as_utc(at)
        current = self._segments[-1]
        if at == current.start and len(self._segments) > 1:
            self._segments.pop()
            current = self._segments[-1]
        if at <= current.start:
            raise WorldError(
                f"{self.resource_type} {self.resource_id}: terminated at or before its last change"
            )
        self._segments[-1] = replace(current, end=at)
        self._terminated_at = at
        return self

    def build(self) -> Resource:
        return Resource(
            resource_type=self.resource_type,
            resource_id=self.resource_id,
            name=self.name,
            created_at=self._segments[0].start,
            terminated_at=self._terminated_at,
            timeline=tuple(self._segments),
            user_id=self.user_id,
            visibility=self.visibility,
            hidden=self.hidden,
        )


class WorldBuilder:
    """Builds a :class:`World` by hand. Ids are derived from the cloud and a counter, so the same
    calls give the same world; pass ``resource_id=`` to choose one."""

    def __init__(self, *, cloud: str, period_from: datetime, period_to: datetime) -> None:
        self.cloud = cloud
        self.period_from = as_utc(period_from)
        self.period_to = as_utc(period_to)
        self._projects: list[WorldProject] = []
        self._flavors: list[Flavor] = []
        self._vtypes: list[VolumeType] = []
        self._drafts: list[Draft] = []
        self._counter = 0

    def _uuid(self, kind: str) -> str:
        self._counter += 1
        return str(uuid.uuid5(_ID_NAMESPACE, f"{self.cloud}/{kind}/{self._counter}"))

    def project(self, name: str, *, project_id: str | None = None) -> WorldProject:
        pid = project_id or hashlib.md5(f"{self.cloud}/project/{name}".encode()).hexdigest()
        project = WorldProject(id=pid, name=name)
        self._projects.append(project)
        return project

    def flavor(
        self,
        name: str,
        *,
        vcpus: int,
        ram_mb: int,
        disk_gb: int,
        ephemeral_gb: int = 0,
        flavor_id: str | None = None,
        is_public: bool = True,
    ) -> Flavor:
        flavor = Flavor(
            id=flavor_id or str(len(self._flavors) + 1),
            name=name,
            vcpus=vcpus,
            ram_mb=ram_mb,
            disk_gb=disk_gb,
            ephemeral_gb=ephemeral_gb,
            is_public=is_public,
        )
        self._flavors.append(flavor)
        return flavor

    def volume_type(self, name: str, *, is_public: bool = True, type_id: str | None = None) -> VolumeType:
        vtype = VolumeType(id=type_id or self._uuid("volume_type"), name=name, is_public=is_public)
        self._vtypes.append(vtype)
        return vtype

    def add(
        self,
        resource_type: ResourceType,
        project: WorldProject | str,
        *,
        created_at: datetime,
        state: str,
        name: str | None = None,
        resource_id: str | None = None,
        user_id: str = "",
        visibility: str = "private",
        transition: str | None = None,
        **facts: Any,
    ) -> Draft:
        """A resource of any type; ``facts`` are the size facts of :class:`Segment`."""
        rid = resource_id or self._uuid(resource_type)
        pid = project.id if isinstance(project, WorldProject) else project
        first = Segment(
            start=as_utc(created_at), end=None, state=state, project_id=pid, transition=transition, **facts
        )
        draft = Draft(
            resource_type,
            rid,
            name if name is not None else f"{resource_type}-{len(self._drafts)}",
            first,
            user_id,
            visibility,
        )
        self._drafts.append(draft)
        return draft

    def instance(
        self,
        project: WorldProject | str,
        flavor: Flavor,
        *,
        created_at: datetime,
        building: timedelta = timedelta(0),
        state: str = "active",
        **kw: Any,
    ) -> Draft:
        """An instance; a non-zero ``building`` gives it nova's ``building`` span first."""
        if building:
            draft = self.add(
                "instance",
                project,
                created_at=created_at,
                state=state,
                flavor_id=flavor.id,
                transition="building",
                **kw,
            )
            return draft.change(as_utc(created_at) + building)
        return self.add("instance", project, created_at=created_at, state=state, flavor_id=flavor.id, **kw)

    def volume(
        self,
        project: WorldProject | str,
        vtype: VolumeType,
        *,
        size_gb: int,
        created_at: datetime,
        state: str = "available",
        **kw: Any,
    ) -> Draft:
        return self.add(
            "volume",
            project,
            created_at=created_at,
            state=state,
            size_gb=size_gb,
            volume_type_id=vtype.id,
            **kw,
        )

    def floating_ip(
        self, project: WorldProject | str, *, address: str, created_at: datetime, **kw: Any
    ) -> Draft:
        return self.add("floating_ip", project, created_at=created_at, state="active", address=address, **kw)

    def image(
        self,
        project: WorldProject | str,
        *,
        size_bytes: int | None,
        created_at: datetime,
        state: str = "active",
        **kw: Any,
    ) -> Draft:
        return self.add("image", project, created_at=created_at, state=state, size_bytes=size_bytes, **kw)

    def loadbalancer(
        self,
        project: WorldProject | str,
        *,
        created_at: datetime,
        listeners: int = 0,
        pools: int = 0,
        **kw: Any,
    ) -> Draft:
        return self.add(
            "loadbalancer",
            project,
            created_at=created_at,
            state="active",
            listeners=listeners,
            pools=pools,
            **kw,
        )

    def build(self) -> World:
        return World(
            cloud=self.cloud,
            period_from=self.period_from,
            period_to=self.period_to,
            projects=tuple(self._projects),
            flavors=tuple(self._flavors),
            volume_types=tuple(self._vtypes),
            resources=tuple(d.build() for d in self._drafts),
        )
