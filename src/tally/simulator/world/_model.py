"""The parts of a world: projects, flavors, volume types, and resources with their timelines.

Each :class:`Resource` carries a *timeline*: contiguous half-open :class:`Segment` spans
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
from its create on; the marker only says what glance lists. Which states, markers
and size facts each type may carry is ``_rules``.

Evaluation at an instant is cheap and allocation-free per resource: a resource
keeps the sorted segment starts and bisects them (:meth:`Resource.segment_at`).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final, Literal

ResourceType = Literal["instance", "volume", "floating_ip", "image", "loadbalancer"]

RESOURCE_TYPES: Final[tuple[ResourceType, ...]] = (
    "instance",
    "volume",
    "floating_ip",
    "image",
    "loadbalancer",
)


@dataclass(frozen=True, slots=True)
class WorldProject:
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

    ``state`` is Tally's canonical state (see :data:`STATES` in ``_rules``). ``transition`` is the
    platform's in-flight marker for the span (see :data:`TRANSITIONS` in ``_rules``), ``None`` when the
    resource rests.
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
