"""The oracle: the true intervals of every resource of a simulated month (format 4).

The intervals are read off the world, not the notifications: from the instant
the collector would book the resource (after nova's ``building``, cinder's
``creating``, octavia's ``PENDING_CREATE``; an image from glance's create, at
size 0 until its upload) to its termination, in the canonical state and size
form the collector's mapping produces. A volume offered for transfer is in state
``awaiting-transfer`` until the transfer is accepted or cancelled; an attached volume is ``in-use``
from cinder's attach to its detach; a soft-deleted server is alive in state ``soft_deleted`` (nova
can still restore it) until a restore makes it ``active`` again or nova's reclaim ends it, so a
restored server has one set of intervals and a reclaimed one ends at the reclaim. They are
half-open, clipped to the month, adjacent equal facts merged and zero-length
spans dropped. Each resource carries the creation instant its platform's listing reports (a sync may
date a create there) and the document the scale it was generated at, so a compare judges it without
regenerating the world. Reading a document refuses unknown members and other formats.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from typing import Any, Final

import orjson

from tally.core import InstantError, format_instant, parse_instant

from ._platform import platform_created
from .world import Resource, Segment, World

ORACLE_FORMAT: Final = 4
WORKLOADS: Final = frozenset({"classic", "gardener", "ci"})
# Spans before the collector books anything: the create notification ends them. An image has none:
# glance's create books it, at size 0 (see docs/reconciliation.md, "When an image starts").
_NOT_YET_BOOKED: Final = frozenset({"building", "creating", "PENDING_CREATE"})


class OracleError(ValueError):
    """An oracle document that cannot be read; the message names the member."""


@dataclass(frozen=True, slots=True)
class OracleInterval:
    start: datetime
    end: datetime
    state: str
    project_id: str
    size: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class OracleResource:
    resource_type: str
    resource_id: str
    workload: str
    intervals: tuple[OracleInterval, ...]
    faults: tuple[str, ...] = ()
    #: The creation instant the platform's listing reports (``_platform``), which a sync may date by.
    platform_created: datetime | None = None


@dataclass(frozen=True, slots=True)
class Count:
    project_id: str
    event_type: str
    count: int


@dataclass(frozen=True, slots=True)
class Traffic:
    resource_id: str
    start: datetime
    end: datetime
    egress_bytes: int
    ingress_bytes: int


@dataclass(frozen=True, slots=True)
class Oracle:
    cloud: str
    seed: int
    period_from: datetime
    period_to: datetime
    resources: tuple[OracleResource, ...]
    counts: tuple[Count, ...] = ()
    faults: tuple[str, ...] = ()
    traffic: tuple[Traffic, ...] = ()
    #: The tenant multiplier the month was generated at: with the seed, the period and its length
    #: (``period_to``), what regenerates it.
    scale: float = 1.0

    def platform_instants(self) -> dict[tuple[str, str], datetime]:
        """The platform's creation instant of every resource that has one, by (type, id)."""
        return {
            (r.resource_type, r.resource_id): r.platform_created
            for r in self.resources
            if r.platform_created is not None
        }

    def to_doc(self) -> dict[str, Any]:
        return {
            "format": ORACLE_FORMAT,
            "cloud": self.cloud,
            "seed": self.seed,
            "scale": self.scale,
            "period_from": format_instant(self.period_from),
            "period_to": format_instant(self.period_to),
            "resources": [
                {
                    "resource_type": r.resource_type,
                    "resource_id": r.resource_id,
                    "workload": r.workload,
                    "intervals": [
                        {
                            "from": format_instant(i.start),
                            "to": format_instant(i.end),
                            "state": i.state,
                            "project_id": i.project_id,
                            "size": dict(i.size),
                        }
                        for i in r.intervals
                    ],
                    "faults": list(r.faults),
                    "platform_created": (
                        format_instant(r.platform_created) if r.platform_created is not None else None
                    ),
                }
                for r in self.resources
            ],
            "counts": [
                {"project_id": c.project_id, "event_type": c.event_type, "count": c.count}
                for c in self.counts
            ],
            "faults": list(self.faults),
            "traffic": [
                {
                    "resource_id": t.resource_id,
                    "from": format_instant(t.start),
                    "to": format_instant(t.end),
                    "egress_bytes": t.egress_bytes,
                    "ingress_bytes": t.ingress_bytes,
                }
                for t in self.traffic
            ],
        }

    def to_json(self) -> bytes:
        """The document, deterministic: sorted keys, resources sorted by type then id."""
        return orjson.dumps(self.to_doc(), option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"

    def resource(self, resource_type: str, resource_id: str) -> OracleResource | None:
        for r in self.resources:
            if r.resource_type == resource_type and r.resource_id == resource_id:
                return r
        return None


# -- from the world ---------------------------------------------------------------------------------


def _plain(value: Fraction) -> int | float:
    return int(value) if value.denominator == 1 else float(value)


def canonical_size(world: World, resource: Resource, seg: Segment) -> dict[str, Any]:
    """The size the collector's mapping books for these facts (volume type by name)."""
    kind = resource.resource_type
    if kind == "instance":
        flavor = world.flavor(seg.flavor_id or "")
        if flavor is None:
            return {}
        return {
            "vcpus": flavor.vcpus,
            "ram_gb": _plain(Fraction(flavor.ram_mb, 1024)),
            "disk_gb": flavor.disk_gb + flavor.ephemeral_gb,
            "flavor": flavor.name,
        }
    if kind == "volume":
        vtype = world.volume_type(seg.volume_type_id or "")
        return {"size_gb": seg.size_gb, "type": vtype.name if vtype is not None else seg.volume_type_id}
    if kind == "floating_ip":
        try:
            version = ipaddress.ip_address(seg.address or "").version
        except ValueError:
            version = 4
        return {"ip_version": version}
    if kind == "image":
        return {"size_gb": _plain(Fraction(seg.size_bytes or 0, 2**30))}
    return {"listeners": seg.listeners or 0, "pools": seg.pools or 0}


def resource_intervals(world: World, resource: Resource) -> tuple[OracleInterval, ...]:
    """The billed intervals of one resource inside the world's period."""
    segments = list(resource.timeline)
    while segments and segments[0].transition in _NOT_YET_BOOKED:
        segments.pop(0)
    out: list[OracleInterval] = []
    lo, hi = world.period_from, world.period_to
    for seg in segments:
        start = max(seg.start, lo)
        end = hi if seg.end is None else min(seg.end, hi)
        if end <= start:
            continue
        size = canonical_size(world, resource, seg)
        if (
            out
            and out[-1].end == start
            and (out[-1].state, out[-1].project_id, out[-1].size)
            == (
                seg.state,
                seg.project_id,
                size,
            )
        ):
            out[-1] = OracleInterval(out[-1].start, end, seg.state, seg.project_id, size)
        else:
            out.append(OracleInterval(start, end, seg.state, seg.project_id, size))
    return tuple(out)


def build_oracle(
    world: World,
    *,
    seed: int,
    workloads: Mapping[str, str],
    faults: Iterable[str] = (),
    touched: Mapping[str, Iterable[str]] | None = None,
    counts: Iterable[Count] = (),
    traffic: Iterable[Traffic] = (),
    scale: float = 1.0,
) -> Oracle:
    touched = touched or {}
    created = platform_created(world)
    resources = []
    for kind in ("floating_ip", "image", "instance", "loadbalancer", "volume"):
        for r in world.of_type(kind):
            intervals = resource_intervals(world, r)
            if not intervals:
                continue
            resources.append(
                OracleResource(
                    kind,
                    r.resource_id,
                    workloads.get(r.resource_id, "classic"),
                    intervals,
                    tuple(sorted(touched.get(r.resource_id, ()))),
                    created.get((kind, r.resource_id)),
                )
            )
    return Oracle(
        cloud=world.cloud,
        seed=seed,
        period_from=world.period_from,
        period_to=world.period_to,
        resources=tuple(resources),
        counts=tuple(sorted(counts, key=lambda c: (c.project_id, c.event_type))),
        faults=tuple(sorted(faults)),
        traffic=tuple(sorted(traffic, key=lambda t: (t.resource_id, t.start))),
        scale=scale,
    )


# -- reading ---------------------------------------------------------------------------------------


def _members(doc: object, where: str, members: tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(doc, Mapping):
        raise OracleError(f"oracle: {where} must be an object")
    unknown = sorted(set(doc) - set(members))
    if unknown:
        raise OracleError(f"oracle: unknown member {unknown[0]!r} in {where}")
    missing = [m for m in members if m not in doc]
    if missing:
        raise OracleError(f"oracle: member {missing[0]!r} missing in {where}")
    return doc


def _instant(value: object, where: str) -> datetime:
    try:
        return parse_instant(value)  # type: ignore[arg-type]
    except InstantError:
        raise OracleError(f"oracle: {where} is not an RFC 3339 instant: {value!r}") from None


def _text(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise OracleError(f"oracle: {where} must be a string")
    return value


def _int(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise OracleError(f"oracle: {where} must be an integer")
    return value


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise OracleError(f"oracle: {where} must be an array")
    return value


_TOP = (
    "format",
    "cloud",
    "seed",
    "scale",
    "period_from",
    "period_to",
    "resources",
    "counts",
    "faults",
    "traffic",
)
_RESOURCE = ("resource_type", "resource_id", "workload", "intervals", "faults", "platform_created")


def read_oracle(data: bytes | str) -> Oracle:
    """Parse an oracle document; anything but a well-formed format 4 raises :class:`OracleError`
    (format 3, without the platform's instants and the scale, is refused: regenerate the month)."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise OracleError(f"oracle: not JSON ({exc})") from None
    if isinstance(doc, Mapping) and doc.get("format") != ORACLE_FORMAT:
        raise OracleError(f"oracle: format {doc.get('format')!r} is not {ORACLE_FORMAT}")
    top = _members(doc, "the document", _TOP)
    return Oracle(
        cloud=_text(top["cloud"], "cloud"),
        seed=_int(top["seed"], "seed"),
        period_from=_instant(top["period_from"], "period_from"),
        period_to=_instant(top["period_to"], "period_to"),
        resources=tuple(
            _read_resource(raw, f"resources[{n}]")
            for n, raw in enumerate(_list(top["resources"], "resources"))
        ),
        counts=tuple(
            _read_count(raw, f"counts[{n}]") for n, raw in enumerate(_list(top["counts"], "counts"))
        ),
        faults=tuple(_text(f, "faults") for f in _list(top["faults"], "faults")),
        traffic=tuple(
            _read_traffic(raw, f"traffic[{n}]") for n, raw in enumerate(_list(top["traffic"], "traffic"))
        ),
        scale=_scale(top["scale"]),
    )


def _read_resource(raw: object, where: str) -> OracleResource:
    r = _members(raw, where, _RESOURCE)
    workload = _text(r["workload"], f"{where}.workload")
    if workload not in WORKLOADS:
        raise OracleError(f"oracle: {where}.workload {workload!r} is not one of {sorted(WORKLOADS)}")
    intervals = _list(r["intervals"], f"{where}.intervals")
    created = r["platform_created"]
    return OracleResource(
        _text(r["resource_type"], f"{where}.resource_type"),
        _text(r["resource_id"], f"{where}.resource_id"),
        workload,
        tuple(_read_interval(i, f"{where}.intervals[{k}]") for k, i in enumerate(intervals)),
        tuple(_text(f, f"{where}.faults") for f in _list(r["faults"], f"{where}.faults")),
        None if created is None else _instant(created, f"{where}.platform_created"),
    )


def _read_interval(raw: object, where: str) -> OracleInterval:
    i = _members(raw, where, ("from", "to", "state", "project_id", "size"))
    if not isinstance(i["size"], Mapping):
        raise OracleError(f"oracle: {where}.size must be an object")
    start, end = _instant(i["from"], f"{where}.from"), _instant(i["to"], f"{where}.to")
    if end <= start:
        raise OracleError(f"oracle: {where} ends at or before it starts")
    return OracleInterval(
        start,
        end,
        _text(i["state"], f"{where}.state"),
        _text(i["project_id"], f"{where}.project_id"),
        dict(i["size"]),
    )


def _read_count(raw: object, where: str) -> Count:
    c = _members(raw, where, ("project_id", "event_type", "count"))
    return Count(
        _text(c["project_id"], f"{where}.project_id"),
        _text(c["event_type"], f"{where}.event_type"),
        _int(c["count"], f"{where}.count"),
    )


def _read_traffic(raw: object, where: str) -> Traffic:
    t = _members(raw, where, ("resource_id", "from", "to", "egress_bytes", "ingress_bytes"))
    return Traffic(
        _text(t["resource_id"], f"{where}.resource_id"),
        _instant(t["from"], f"{where}.from"),
        _instant(t["to"], f"{where}.to"),
        _int(t["egress_bytes"], f"{where}.egress_bytes"),
        _int(t["ingress_bytes"], f"{where}.ingress_bytes"),
    )


def _scale(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise OracleError("oracle: scale must be a number above 0")
    return float(value)
