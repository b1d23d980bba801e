"""The world as a whole: its parts indexed for lookups, its view at an instant, and its document.

A :class:`World` is plain data. It names the cloud, the period, the projects, the
flavors and volume types, and the resources of the five types Tally meters; its
constructor checks every part against ``_rules``. The world keeps one list per
resource type sorted by resource id, so a listing pages by marker with a
bisection (:meth:`World.position_after`) and never builds a per-request copy of
the world.

``World.to_json()`` / ``World.from_json()`` round-trip a world through a
deterministic JSON document (sorted keys, instants in RFC 3339 with ``Z``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, Final

import orjson

from tally.core import as_utc, format_instant, parse_instant

from ._model import RESOURCE_TYPES, Flavor, Resource, Segment, VolumeType, WorldProject
from ._rules import ALL_SIZE_FACTS, WorldError, check_project_id, check_resource

WORLD_FORMAT: Final = 1


@dataclass(frozen=True, slots=True, eq=False)
class World:
    """A cloud over a period: projects, flavors, volume types and resources of the five types.

    Construct through :class:`WorldBuilder` or :meth:`from_json`, or directly with validated
    parts; the constructor sorts resources by id per type and checks every timeline.
    """

    cloud: str
    period_from: datetime
    period_to: datetime
    projects: tuple[WorldProject, ...]
    flavors: tuple[Flavor, ...]
    volume_types: tuple[VolumeType, ...]
    resources: tuple[Resource, ...]
    _by_type: dict[str, tuple[Resource, ...]] = field(init=False, repr=False)
    _ids_by_type: dict[str, tuple[str, ...]] = field(init=False, repr=False)
    _by_id: dict[str, Resource] = field(init=False, repr=False)
    _flavors: dict[str, Flavor] = field(init=False, repr=False)
    _volume_types: dict[str, VolumeType] = field(init=False, repr=False)
    _projects: dict[str, WorldProject] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.period_to <= self.period_from:
            raise WorldError(f"period_to {format_instant(self.period_to)} is not after period_from")
        projects = {p.id: p for p in self.projects}
        flavors = {f.id: f for f in self.flavors}
        vtypes = {v.id: v for v in self.volume_types}
        for p in self.projects:
            check_project_id(p.id)
        by_id: dict[str, Resource] = {}
        for r in self.resources:
            if r.resource_id in by_id:
                raise WorldError(f"resource id {r.resource_id} appears twice")
            check_resource(r, projects, flavors, vtypes)
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

    def project(self, project_id: str) -> WorldProject | None:
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
                projects=tuple(WorldProject(**p) for p in doc["projects"]),
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


# -- the document ----------------------------------------------------------------------------------


def _plain(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in fields(obj) if not f.name.startswith("_")}


def _segment_doc(seg: Segment) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "start": format_instant(seg.start),
        "end": None if seg.end is None else format_instant(seg.end),
        "state": seg.state,
        "project_id": seg.project_id,
    }
    for name in ("transition", "attached_to", *ALL_SIZE_FACTS):
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
