"""The simulated world: what a cloud holds, and how each resource changes, over one period.

A :class:`World` is plain data. It names the cloud, the period, the projects, the
flavors and volume types, and the resources of the five types Tally meters. Each
:class:`Resource` carries a *timeline*: contiguous half-open :class:`Segment` spans
``[start, end)`` from ``created_at`` to ``terminated_at`` (``None``: still alive
at the end of time). A segment states the facts an API listing shows while it is
in effect: the canonical Tally state, the owning project, the size facts of its
type, what it is attached to, and an optional platform *transition* marker for
spans where the platform is still changing the resource (nova ``building`` or a
task_state, one of cinder's twelve in-flight statuses, octavia ``PENDING_*``) or,
for an image, the glance status it shows before its data is active (``queued``,
``saving``). A status a resource rests in is a state, never a marker: cinder's
``awaiting-transfer`` and ``maintenance`` are states of a volume. An image is
never in transition for Tally (seed 000): it exists, at size 0 until its upload,
from its create on; the marker only says what glance lists.

The same world feeds three readers, which is why it is data and not behaviour:
the fake OpenStack API answers listings from it at an instant, the month
generator writes it, and the notifications and the oracle are derived from it.

Evaluation at an instant is cheap and allocation-free per resource: a resource
keeps the sorted segment starts and bisects them (:meth:`Resource.segment_at`).
The world keeps one list per resource type sorted by resource id, so a listing
pages by marker with a bisection (:meth:`World.position_after`) and never builds
a per-request copy of the world.

Building a world by hand (tests, benchmarks)::

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

``World.to_json()`` / ``World.from_json()`` round-trip a world through a
deterministic JSON document (sorted keys, instants in RFC 3339 with ``Z``).
"""

from __future__ import annotations

import bisect
import hashlib
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timedelta
from typing import Any, Final, Literal

import orjson

from tally.core import as_utc, format_instant, parse_instant

ResourceType = Literal["instance", "volume", "floating_ip", "image", "loadbalancer"]

RESOURCE_TYPES: Final[tuple[ResourceType, ...]] = (
    "instance",
    "volume",
    "floating_ip",
    "image",
    "loadbalancer",
)

WORLD_FORMAT: Final = 1

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

_ALL_SIZE_FACTS: Final = (
    "flavor_id",
    "size_gb",
    "volume_type_id",
    "address",
    "size_bytes",
    "listeners",
    "pools",
)

_ID_NAMESPACE: Final = uuid.UUID("6f1d2c8e-4b7a-5e39-9a0c-3d5f7e1b2a64")


class WorldError(ValueError):
    """A world that cannot be served: the message names the resource and the broken rule."""


@dataclass(frozen=True, slots=True)
class Project:
    """A keystone project: ``id`` is 32 lower-case hex digits, as keystone writes them."""

    id: str
    name: str
    domain_id: str = "default"


@dataclass(frozen=True, slots=True)
class Flavor:
    """A nova flavor; ``id`` is nova's flavorid string. Sizes in nova's units (MiB, GiB)."""

    id: str
    name: str
    vcpus: int
    ram_mb: int
    disk_gb: int
    ephemeral_gb: int = 0
    swap_mb: int = 0
    is_public: bool = True


@dataclass(frozen=True, slots=True)
class VolumeType:
    """A cinder volume type; a private one is listed only with ``is_public=None``."""

    id: str
    name: str
    is_public: bool = True
    description: str | None = None


@dataclass(frozen=True, slots=True)
class Segment:
    """The facts of one resource over ``[start, end)``; ``end`` is ``None`` only on an open last span.

    ``state`` is Tally's canonical state (see :data:`STATES`). ``transition`` is the platform's
    in-flight marker for the span (see :data:`TRANSITIONS`), ``None`` when the resource rests.
    Size facts by type: instance ``flavor_id``; volume ``size_gb`` and ``volume_type_id``;
    floating_ip ``address``; image ``size_bytes`` (``None`` until data is uploaded);
    loadbalancer ``listeners`` and ``pools`` (counts). ``attached_to`` is the server a volume
    is attached to or a floating IP is associated with.
    """

    start: datetime
    end: datetime | None
    state: str
    project_id: str
    transition: str | None = None
    flavor_id: str | None = None
    size_gb: int | None = None
    volume_type_id: str | None = None
    address: str | None = None
    size_bytes: int | None = None
    listeners: int | None = None
    pools: int | None = None
    attached_to: str | None = None

    def contains(self, instant: datetime) -> bool:
        return self.start <= instant and (self.end is None or instant < self.end)


@dataclass(frozen=True, slots=True, eq=False)
class Resource:
    """One resource and its timeline.

    ``timeline`` is contiguous: the first segment starts at ``created_at``, each ends where the next
    starts, and the last ends at ``terminated_at`` (``None`` when alive at the end). ``user_id`` is
    the keystone user that created it; ``visibility`` and ``hidden`` (glance's ``os_hidden``: listed
    only when asked for) apply to images only.
    """

    resource_type: ResourceType
    resource_id: str
    name: str
    created_at: datetime
    terminated_at: datetime | None
    timeline: tuple[Segment, ...]
    user_id: str = ""
    visibility: str = "private"
    hidden: bool = False
    _starts: tuple[datetime, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_starts", tuple(s.start for s in self.timeline))

    def alive_at(self, instant: datetime) -> bool:
        """Whether the platform holds the resource (transitions included) at ``instant``."""
        return self.created_at <= instant and (self.terminated_at is None or instant < self.terminated_at)

    def segment_at(self, instant: datetime) -> Segment | None:
        """The segment in effect at ``instant``; ``None`` before creation or from termination on."""
        if not self.alive_at(instant):
            return None
        return self.timeline[bisect.bisect_right(self._starts, instant) - 1]

    def updated_at(self, instant: datetime) -> datetime | None:
        """When the platform last changed the resource, as of ``instant``.

        The start of the segment in effect, or ``terminated_at`` once it is gone; ``None`` while the
        first segment is in effect (never updated: cinder and octavia show ``null``, nova and
        the others show the creation instant).
        """
        if instant < self.created_at:
            return None
        if self.terminated_at is not None and instant >= self.terminated_at:
            return self.terminated_at
        index = bisect.bisect_right(self._starts, instant) - 1
        return None if index <= 0 else self._starts[index]

    @property
    def last(self) -> Segment:
        """The last segment: the facts the resource ends (or stays) with."""
        return self.timeline[-1]

    @property
    def launched_at(self) -> datetime | None:
        """For an instance, the end of its initial ``building`` span (or creation when it has none)."""
        first = self.timeline[0]
        if first.transition == "building":
            return first.end
        return self.created_at


@dataclass(frozen=True, slots=True, eq=False)
class World:
    """A cloud over a period: projects, flavors, volume types and resources of the five types.

    Construct through :class:`WorldBuilder` or :meth:`from_json`, or directly with validated
    parts; the constructor sorts resources by id per type and checks every timeline.
    """

    cloud: str
    period_from: datetime
    period_to: datetime
    projects: tuple[Project, ...]
    flavors: tuple[Flavor, ...]
    volume_types: tuple[VolumeType, ...]
    resources: tuple[Resource, ...]
    _by_type: dict[str, tuple[Resource, ...]] = field(init=False, repr=False)
    _ids_by_type: dict[str, tuple[str, ...]] = field(init=False, repr=False)
    _by_id: dict[str, Resource] = field(init=False, repr=False)
    _flavors: dict[str, Flavor] = field(init=False, repr=False)
    _volume_types: dict[str, VolumeType] = field(init=False, repr=False)
    _projects: dict[str, Project] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.period_to <= self.period_from:
            raise WorldError(f"period_to {format_instant(self.period_to)} is not after period_from")
        projects = {p.id: p for p in self.projects}
        flavors = {f.id: f for f in self.flavors}
        vtypes = {v.id: v for v in self.volume_types}
        for p in self.projects:
            _check_project_id(p.id)
        by_id: dict[str, Resource] = {}
        for r in self.resources:
            if r.resource_id in by_id:
                raise WorldError(f"resource id {r.resource_id} appears twice")
            _check_resource(r, projects, flavors, vtypes)
            by_id[r.resource_id] = r
        by_type: dict[str, tuple[Resource, ...]] = {}
        for rtype in RESOURCE_TYPES:
            ordered = sorted(
                (r for r in self.resources if r.resource_type == rtype), key=lambda r: r.resource_id
            )
            by_type[rtype] = tuple(ordered)
        object.__setattr__(self, "_by_type", by_type)
        object.__setattr__(
            self, "_ids_by_type", {t: tuple(r.resource_id for r in rs) for t, rs in by_type.items()}
        )
        object.__setattr__(self, "_by_id", by_id)
        object.__setattr__(self, "_flavors", flavors)
        object.__setattr__(self, "_volume_types", vtypes)
        object.__setattr__(self, "_projects", projects)

    # -- lookups ------------------------------------------------------------------------------------

    def of_type(self, resource_type: str) -> tuple[Resource, ...]:
        """The resources of one type, sorted by resource id (the listing order of the fake)."""
        return self._by_type[resource_type]

    def position_after(self, resource_type: str, marker: str) -> int | None:
        """Index of the first resource after ``marker`` in :meth:`of_type` order; ``None`` if unknown."""
        ids = self._ids_by_type[resource_type]
        index = bisect.bisect_left(ids, marker)
        if index < len(ids) and ids[index] == marker:
            return index + 1
        return None

    def resource(self, resource_id: str) -> Resource | None:
        return self._by_id.get(resource_id)

    def flavor(self, flavor_id: str) -> Flavor | None:
        return self._flavors.get(flavor_id)

    def volume_type(self, type_id: str) -> VolumeType | None:
        return self._volume_types.get(type_id)

    def project(self, project_id: str) -> Project | None:
        return self._projects.get(project_id)

    def answer_instant(self, virtual_now: datetime) -> datetime:
        """The instant the API answers at: ``min(virtual_now, period_to)``."""
        return min(as_utc(virtual_now), self.period_to)

    def at(self, instant: datetime) -> WorldView:
        """What the listings show at ``instant`` (a lightweight view; nothing is copied)."""
        return WorldView(self, as_utc(instant))

    # -- serialisation ------------------------------------------------------------------------------

    def to_json(self) -> bytes:
        """A deterministic JSON document of the world (same world, same bytes)."""
        doc = {
            "format": WORLD_FORMAT,
            "cloud": self.cloud,
            "period_from": format_instant(self.period_from),
            "period_to": format_instant(self.period_to),
            "projects": [_plain(p) for p in sorted(self.projects, key=lambda p: p.id)],
            "flavors": [_plain(f) for f in sorted(self.flavors, key=lambda f: f.id)],
            "volume_types": [_plain(v) for v in sorted(self.volume_types, key=lambda v: v.id)],
            "resources": [_resource_doc(r) for t in RESOURCE_TYPES for r in self._by_type[t]],
        }
        return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)

    @classmethod
    def from_json(cls, data: bytes | str) -> World:
        """Read a document written by :meth:`to_json`; anything else raises :class:`WorldError`."""
        try:
            doc = orjson.loads(data)
            if doc.get("format") != WORLD_FORMAT:
                raise WorldError(f"world document format {doc.get('format')!r} is not {WORLD_FORMAT}")
            return cls(
                cloud=str(doc["cloud"]),
                period_from=parse_instant(doc["period_from"]),
                period_to=parse_instant(doc["period_to"]),
                projects=tuple(Project(**p) for p in doc["projects"]),
                flavors=tuple(Flavor(**f) for f in doc["flavors"]),
                volume_types=tuple(VolumeType(**v) for v in doc["volume_types"]),
                resources=tuple(_resource_from_doc(r) for r in doc["resources"]),
            )
        except WorldError:
            raise
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise WorldError(f"not a world document: {exc}") from exc


@dataclass(frozen=True, slots=True)
class WorldView:
    """The world as the listings show it at one instant."""

    world: World
    instant: datetime

    def live(self, resource_type: str, start: int = 0) -> Iterator[tuple[Resource, Segment]]:
        """Alive resources of a type from index ``start`` of :meth:`World.of_type`, with their segment."""
        resources = self.world.of_type(resource_type)
        instant = self.instant
        for index in range(start, len(resources)):
            segment = resources[index].segment_at(instant)
            if segment is not None:
                yield resources[index], segment

    def deleted_instances(self) -> Iterator[Resource]:
        """Instances terminated at or before the instant (nova still lists them with deleted=true)."""
        for r in self.world.of_type("instance"):
            if r.terminated_at is not None and r.terminated_at <= self.instant:
                yield r


# -- the builder -----------------------------------------------------------------------------------


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
        self._projects: list[Project] = []
        self._flavors: list[Flavor] = []
        self._vtypes: list[VolumeType] = []
        self._drafts: list[Draft] = []
        self._counter = 0

    def _uuid(self, kind: str) -> str:
        self._counter += 1
        return str(uuid.uuid5(_ID_NAMESPACE, f"{self.cloud}/{kind}/{self._counter}"))

    def project(self, name: str, *, project_id: str | None = None) -> Project:
        pid = project_id or hashlib.md5(f"{self.cloud}/project/{name}".encode()).hexdigest()
        project = Project(id=pid, name=name)
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
        project: Project | str,
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
        pid = project.id if isinstance(project, Project) else project
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
        project: Project | str,
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
        project: Project | str,
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

    def floating_ip(self, project: Project | str, *, address: str, created_at: datetime, **kw: Any) -> Draft:
        return self.add("floating_ip", project, created_at=created_at, state="active", address=address, **kw)

    def image(
        self,
        project: Project | str,
        *,
        size_bytes: int | None,
        created_at: datetime,
        state: str = "active",
        **kw: Any,
    ) -> Draft:
        return self.add("image", project, created_at=created_at, state=state, size_bytes=size_bytes, **kw)

    def loadbalancer(
        self, project: Project | str, *, created_at: datetime, listeners: int = 0, pools: int = 0, **kw: Any
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


# -- checks and documents --------------------------------------------------------------------------


def _check_project_id(pid: str) -> None:
    if len(pid) != 32 or any(c not in "0123456789abcdef" for c in pid):
        raise WorldError(f"project id {pid!r} is not 32 lower-case hex digits")


def _check_resource(
    r: Resource,
    projects: Mapping[str, Project],
    flavors: Mapping[str, Flavor],
    vtypes: Mapping[str, VolumeType],
) -> None:
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
        for name in _ALL_SIZE_FACTS:
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


def _plain(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in fields(obj) if not f.name.startswith("_")}


def _segment_doc(seg: Segment) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "start": format_instant(seg.start),
        "end": None if seg.end is None else format_instant(seg.end),
        "state": seg.state,
        "project_id": seg.project_id,
    }
    for name in ("transition", "attached_to", *_ALL_SIZE_FACTS):
        value = getattr(seg, name)
        if value is not None:
            doc[name] = value
    return doc


def _resource_doc(r: Resource) -> dict[str, Any]:
    return {
        "resource_type": r.resource_type,
        "resource_id": r.resource_id,
        "name": r.name,
        "user_id": r.user_id,
        "visibility": r.visibility,
        "created_at": format_instant(r.created_at),
        "terminated_at": None if r.terminated_at is None else format_instant(r.terminated_at),
        "timeline": [_segment_doc(s) for s in r.timeline],
        **({"hidden": True} if r.hidden else {}),
    }


def _resource_from_doc(doc: Mapping[str, Any]) -> Resource:
    segments = []
    for s in doc["timeline"]:
        s = dict(s)
        s["start"] = parse_instant(s["start"])
        s["end"] = None if s.get("end") is None else parse_instant(s["end"])
        segments.append(Segment(**s))
    return Resource(
        resource_type=doc["resource_type"],
        resource_id=doc["resource_id"],
        name=doc["name"],
        created_at=parse_instant(doc["created_at"]),
        terminated_at=None if doc.get("terminated_at") is None else parse_instant(doc["terminated_at"]),
        timeline=tuple(segments),
        user_id=doc.get("user_id", ""),
        visibility=doc.get("visibility", "private"),
        hidden=bool(doc.get("hidden", False)),
    )
