"""One simulated month from a seed: the world, its notifications with faults, and the oracle."""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from .._streams import (
    DAY,
    HOUR,
    AddressPool,
    GeneratorError,
    TimeProfile,
    draw_hex32,
    draw_uuid,
    hour_weight,
    jitter,
    parse_period,
    stream,
)
from ..faults import apply_faults, parse_faults
from ..notifications import Notification, tally_type
from ..oracle import Count, Oracle, Traffic, build_oracle
from ..world import Flavor, VolumeType, World, WorldBuilder
from . import _workloads as wl
from ._recorder import Recorder, Tenant
from ._soft_delete import retention

log = logging.getLogger(__name__)

FLAVORS = (
    ("1", "m1.small", 1, 2048, 20, 0),
    ("2", "m1.medium", 2, 4096, 40, 0),
    ("3", "m1.large", 4, 8192, 40, 40),
    ("4", "m1.xlarge", 8, 16384, 160, 0),
    ("5", "c1.large", 4, 8192, 0, 0),
)
VOLUME_TYPE_IDS = (
    ("ssd", "9b7c2a3e-5d41-4f7a-8c1e-2f6d0a9b3c11"),
    ("hdd", "4e1f8d2c-7a3b-4c9e-9d5f-6b2a1c8e7f22"),
    ("standard", "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c33"),
)
_MISC_NOISE = (
    ("keystone", "identity.authenticate", 40),
    ("keystone", "identity.user.updated", 1),
    ("keystone", "identity.application_credential.created", 1),
    ("designate", "dns.zone.update", 2),
    ("designate", "dns.recordset.create", 2),
    ("designate", "dns.recordset.delete", 1),
    ("barbican", "secret.create", 1),
    ("barbican", "secret.get", 3),
    ("glance", "image.update", 1),
    ("glance", "image.send", 2),
)
_MISC_RATE = 0.18


@dataclass(frozen=True, slots=True)
class TenantInfo:
    """A keystone project of the month: its workload and, for Gardener tenants, the Gardener project."""

    project_id: str
    name: str
    workload: str
    gardener_project: str | None = None


@dataclass(frozen=True, repr=False)
class Month:
    """A generated month. ``notifications`` is what the bus gets, in publication order;
    ``held_back`` what the held-back fault withholds until a release."""

    seed: int
    period: str
    cloud: str
    scale: float
    faults: frozenset[str]
    world: World
    notifications: tuple[Notification, ...]
    held_back: tuple[Notification, ...]
    oracle: Oracle
    tenants: tuple[TenantInfo, ...]
    workloads: dict[str, str]

    def __repr__(self) -> str:
        return (
            f"Month(seed={self.seed}, period={self.period!r}, cloud={self.cloud!r}, scale={self.scale}, "
            f"faults={sorted(self.faults)}, notifications={len(self.notifications)}, "
            f"held_back={len(self.held_back)}, resources={len(self.world.resources)})"
        )

    @property
    def period_from(self) -> datetime:
        return self.world.period_from

    @property
    def period_to(self) -> datetime:
        return self.world.period_to

    @property
    def billable(self) -> int:
        return sum(1 for n in self.notifications if n.billable)


def _check(seed: int, scale: float, cloud: str) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise GeneratorError(f"seed must be a non-negative integer, not {seed!r}")
    if (
        isinstance(scale, bool)
        or not isinstance(scale, int | float)
        or not math.isfinite(scale)
        or not 0 < scale <= 1000
    ):
        raise GeneratorError(f"scale {scale!r} is outside (0, 1000]")
    if not isinstance(cloud, str) or not cloud.strip():
        raise GeneratorError("cloud must be a non-empty name")


def _build(
    seed: int, period: str, scale: float, cloud: str, days: int | None, now: datetime | None
) -> tuple[World, Recorder, tuple[TenantInfo, ...], frozenset[str], list[Tenant]]:
    start, end = parse_period(period, days=days, now=now)
    builder = WorldBuilder(cloud=cloud, period_from=start, period_to=end)
    flavors: dict[str, Flavor] = {}
    for fid, name, vcpus, ram, disk, eph in FLAVORS:
        flavors[name] = builder.flavor(
            name, vcpus=vcpus, ram_mb=ram, disk_gb=disk, ephemeral_gb=eph, flavor_id=fid
        )
    vtypes: dict[str, VolumeType] = {
        name: builder.volume_type(name, type_id=tid) for name, tid in VOLUME_TYPE_IDS
    }
    rec = Recorder(builder, flavors, vtypes)
    span = wl.Span(start, end, TimeProfile(start, end))
    names = stream(seed, "ids/tenants", period, cloud)
    addresses = AddressPool(stream(seed, "ids/addresses", period, cloud))

    def tenant(key: str, name: str, workload: str) -> Tenant:
        project = builder.project(name, project_id=draw_hex32(names))
        return Tenant(project, draw_hex32(names), workload, stream(seed, f"ids/{key}", period, cloud))

    n_classic = max(1, round(3 * scale))
    n_garden = max(1, round(scale))
    n_ci = max(1, round(scale))
    classic = [tenant(f"classic/{i}", f"classic-{i + 1}", "classic") for i in range(n_classic)]
    gardens = []
    for k in range(n_garden):
        suffix = "" if k == 0 else f"-{k + 1}"
        gardens.append(
            (
                tenant(f"alpha/{k}", f"garden-alpha{suffix}", "gardener"),
                tenant(f"beta/{k}", f"garden-beta{suffix}", "gardener"),
            )
        )
    cis = [tenant(f"ci/{k}", "ci" if k == 0 else f"ci-{k + 1}", "ci") for k in range(n_ci)]
    all_tenants = [*classic, *(t for pair in gardens for t in pair), *cis]
    infos = [TenantInfo(t.project.id, t.project.name, t.workload) for t in classic]
    for k, (alpha, beta) in enumerate(gardens):
        suffix = "" if k == 0 else f"-{k + 1}"
        infos.append(TenantInfo(alpha.project.id, alpha.project.name, "gardener", f"alpha{suffix}"))
        infos.append(TenantInfo(beta.project.id, beta.project.name, "gardener", f"beta{suffix}"))
    infos.extend(TenantInfo(t.project.id, t.project.name, "ci") for t in cis)

    pre_existing: set[str] = set()
    for i, t in enumerate(classic):
        following = classic[(i + 1) % n_classic] if n_classic > 1 else gardens[0][0]
        pre_existing |= wl.classic(
            rec,
            t,
            following,
            span,
            stream(seed, f"shape/classic/{i}", period),
            stream(seed, f"shape/pre-existing/{i}", period),
            addresses,
            # The second project's, so a world of one classic project (scale below 0.5) still shows
            # an image of another project in the default listing, as check-cloud's narrowing probe expects.
            hide_first_image=i == 1,
        )
    for k, (alpha, beta) in enumerate(gardens):
        wl.gardener_alpha(rec, alpha, span, stream(seed, f"shape/alpha/{k}", period), addresses)
        wl.gardener_beta(rec, beta, span, stream(seed, f"shape/beta/{k}", period), addresses)
    for k, t in enumerate(cis):
        wl.ci(rec, t, span, stream(seed, f"shape/ci/{k}", period))
    # Last, on streams of their own, so every resource drawn before keeps its ids and instants.
    for i, t in enumerate(classic):
        retention(rec, t, span, stream(seed, f"shape/retention/{i}", period))
    return builder.build(), rec, tuple(infos), frozenset(pre_existing), all_tenants


def generate_world(
    seed: int,
    period: str,
    scale: float = 1.0,
    cloud: str = "os-sim",
    *,
    days: int | None = None,
    now: datetime | None = None,
) -> World:
    """The world of a month alone (what the fake cloud serves)."""
    _check(seed, scale, cloud)
    return _build(seed, period, scale, cloud, days, now)[0]


def _noise(rec: Recorder, world: World, tenants: Iterable[Tenant], seed: int, period: str) -> None:
    """Daily nova audits and the background chatter of keystone, designate, barbican and glance."""
    rng = stream(seed, "noise", period)
    start, end = world.period_from, world.period_to
    # Creation order, not id order: the cloud salts ids, and must not move the noise.
    for r in (r for r in world.resources if r.resource_type == "instance"):
        day = max(start, r.created_at.replace(hour=0, minute=0, second=0, microsecond=0)) + DAY
        last = end if r.terminated_at is None else min(end, r.terminated_at + DAY)
        host = rec.hosts.get(r.resource_id, "")
        while day < last:
            seg = r.segment_at(day - timedelta(microseconds=1)) or r.timeline[-1]
            at = day + jitter(rng, 0, 600)
            if at < end:
                state = {"active": "active", "shutoff": "stopped", "shelved": "shelved_offloaded"}.get(
                    seg.state, seg.state
                )
                rec.emit(
                    at,
                    "compute.instance.exists",
                    "nova",
                    None,
                    resource_id=r.resource_id,
                    state=state,
                    host=host,
                    project_id=seg.project_id,
                    user_id=r.user_id,
                )
            day += DAY
    kinds = [(s, e) for s, e, w in _MISC_NOISE for _ in range(w)]
    for t in tenants:
        hour = start
        while hour < end:
            for _ in range(hour_weight(hour)):
                if rng.random() < _MISC_RATE:
                    service, event_type = rng.choice(kinds)
                    rec.emit(
                        hour + jitter(rng, 0, 3599),
                        event_type,
                        service,
                        t,
                        resource_id=draw_uuid(rng),
                        state="active",
                    )
            hour += HOUR


def _counts(notifications: Iterable[Notification]) -> list[Count]:
    tally: Counter[tuple[str, str]] = Counter()
    for n in notifications:
        if n.billable:
            tally[(n.project_id, tally_type(n.event_type))] += 1
    return [Count(p, e, c) for (p, e), c in tally.items()]


def _traffic(world: World, seed: int, period: str) -> list[Traffic]:
    rng = stream(seed, "traffic", period)
    out = []
    for r in (r for r in world.resources if r.resource_type == "floating_ip"):
        day = world.period_from
        while day < world.period_to:
            lo, hi = (
                max(day, r.created_at),
                min(day + DAY, r.terminated_at or world.period_to, world.period_to),
            )
            if hi > lo:
                seconds = (hi - lo).total_seconds()
                out.append(
                    Traffic(
                        r.resource_id,
                        lo,
                        hi,
                        int(seconds * rng.uniform(1e3, 2e5)),
                        int(seconds * rng.uniform(1e3, 5e4)),
                    )
                )
            day += DAY
    return out


def generate_month(
    seed: int,
    period: str,
    *,
    scale: float = 1.0,
    cloud: str = "os-sim",
    faults: Iterable[str] | str = frozenset(),
    days: int | None = None,
    now: datetime | None = None,
) -> Month:
    """The month of ``seed`` and ``period``: the same arguments give the same month on any machine.

    ``days`` shortens the period (small test months); ``now`` is the instant the period must have
    ended by (the wall clock by default). Faults change only the notifications.
    """
    began = time.monotonic()
    _check(seed, scale, cloud)
    chosen = parse_faults(faults)
    world, rec, infos, pre_existing, tenants = _build(seed, period, scale, cloud, days, now)
    _noise(rec, world, tenants, seed, period)
    base = sorted(
        (n for n in rec.notifications if n.timestamp < world.period_to), key=lambda n: (n.published_at, n.seq)
    )
    ids = stream(seed, "ids/messages", period, cloud)
    for n in base:
        n.message_id = draw_uuid(ids)
        n.world = world
    outcome = apply_faults(
        base, chosen, seed=seed, period=period, period_from=world.period_from, pre_existing=pre_existing
    )
    oracle = build_oracle(
        world,
        seed=seed,
        workloads=rec.workload,
        faults=chosen,
        touched=outcome.touched,
        counts=_counts(base),
        traffic=_traffic(world, seed, period),
        scale=scale,
    )
    month = Month(
        seed=seed,
        period=period,
        cloud=cloud,
        scale=scale,
        faults=chosen,
        world=world,
        notifications=tuple(outcome.published),
        held_back=tuple(outcome.held_back),
        oracle=oracle,
        tenants=infos,
        workloads=dict(rec.workload),
    )
    log.info(
        "month generated seed=%d period=%s scale=%s faults=%s notifications=%d billable=%d held_back=%d "
        "resources=%d seconds=%.2f",
        seed,
        period,
        scale,
        ",".join(sorted(chosen)) or "-",
        len(month.notifications),
        month.billable,
        len(month.held_back),
        len(world.resources),
        time.monotonic() - began,
    )
    return month
