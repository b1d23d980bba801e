"""The three workloads of the simulated cloud: classic projects, Gardener shoots and CI runners.

Each function draws from the tenant's own shape stream and writes through the
:class:`Recorder`, which keeps the world and the notifications in step. The rules
are those of the spec's "Simulated world": counts, flavors, sizes and when things
happen; the time profile places what a person would do in working hours.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from .._streams import DAY, HOUR, AddressPool, TimeProfile, is_working_day, jitter
from ._recorder import Handle, Recorder, Tenant

MINUTE = timedelta(minutes=1)
GIB = 2**30
HOSTS = ("compute-01", "compute-02", "compute-03", "compute-04")
VOLUME_TYPES = ("ssd", "hdd", "standard")
CLASSIC_FLAVORS = ("m1.small", "m1.medium", "m1.large", "m1.xlarge")
RESIZE_TO = {
    "m1.small": "m1.medium",
    "m1.medium": "m1.large",
    "m1.large": "m1.xlarge",
    "m1.xlarge": "m1.large",
}


@dataclass
class Span:
    """The period, with the last instant an action may start so its notifications stay inside it."""

    start: datetime
    end: datetime
    profile: TimeProfile

    @property
    def last(self) -> datetime:
        return self.end - 2 * HOUR

    def ok(self, at: datetime) -> bool:
        return at < self.last

    def days(self) -> list[datetime]:
        out = []
        day = self.start
        while day < self.end:
            out.append(day)
            day += DAY
        return out

    def fraction(self, lo: float, hi: float) -> tuple[datetime, datetime]:
        length = self.end - self.start
        return self.start + length * lo, self.start + length * hi


def _host(rng: random.Random) -> str:
    return rng.choice(HOSTS)


def _image_bytes(rng: random.Random) -> int:
    return rng.randint(4, 16) * GIB // 4


# -- classic -------------------------------------------------------------------------------------------


def classic(
    rec: Recorder,
    tenant: Tenant,
    next_tenant: Tenant,
    span: Span,
    rng: random.Random,
    picks: random.Random,
    addresses: AddressPool,
    *,
    hide_first_image: bool = False,
) -> set[str]:
    """One classic project; returns the ids of the resources that pre-exist the month.

    The steps draw from ``rng`` one after another, in this order: the month is the seed's only if the
    order never changes."""
    _classic_images(rec, tenant, span, rng, hide_first_image)
    instances, pre_existing = _classic_instances(rec, tenant, span, rng, picks, addresses)
    delete_at = None
    lo, hi = max(span.end - 10 * DAY, span.start + 12 * HOUR), span.last
    if hi > lo:
        delete_at = span.profile.draw(rng, lo, hi)
    for n, vm in enumerate(instances):
        limit = delete_at - HOUR if (n == 0 and delete_at is not None) else span.last
        _instance_ops(rec, vm, n, span, limit, rng)
    if delete_at is not None:
        _delete_with_its_volumes(rec, instances[0], delete_at, rng)
    _extend_then_retype(rec, instances[1].volumes[0], span, rng)
    third = instances[2].fip
    lo, hi = span.fraction(0.45, 0.55)
    if third is not None and span.ok(hi):
        rec.release(third, max(span.profile.draw(rng, lo, hi), third.draft.current.start + MINUTE))
    _spare_volume_transferred(rec, tenant, next_tenant, span, rng)
    return pre_existing


def _classic_images(
    rec: Recorder, tenant: Tenant, span: Span, rng: random.Random, hide_first_image: bool
) -> None:
    """Two images early in the month; the second deleted near its end, the first maybe hidden."""
    profile = span.profile
    images = []
    for n in range(2):
        at = profile.draw(rng, span.start, span.start + (span.end - span.start) / 3)
        images.append(rec.image(tenant, _image_bytes(rng), at, f"image-{n + 1}", rng))
    lo, hi = max(span.fraction(0.77, 1.0)[0], span.start + 6 * HOUR), span.last
    if hi > lo:
        rec.delete_image(images[1], profile.draw(rng, lo, hi))
    # Kept but hidden from the default listing (glance's os_hidden), as operators hide superseded images.
    images[0].draft.hidden = hide_first_image


def _classic_instances(
    rec: Recorder,
    tenant: Tenant,
    span: Span,
    rng: random.Random,
    picks: random.Random,
    addresses: AddressPool,
) -> tuple[list[Handle], set[str]]:
    """Four servers, each with one or two attached volumes and a floating IP; a third of them booted
    before the month (those pre-exist it, with their volumes and address)."""
    pre_existing: set[str] = set()
    instances: list[Handle] = []
    for n in range(4):
        flavor = rng.choice(CLASSIC_FLAVORS)
        if picks.random() < 1 / 3:
            at = span.start - jitter(picks, 86400, 30 * 86400)
        else:
            at = span.profile.draw(rng, span.start, span.start + 6 * HOUR)
        vm = rec.boot(tenant, flavor, at, f"{tenant.project.name}-vm-{n + 1}", _host(rng), rng)
        ready = vm.draft.current.start + jitter(rng, 30, 300)
        for k in range(rng.randint(1, 2)):
            vol = rec.volume(
                tenant, rng.choice((50, 100, 200)), rng.choice(VOLUME_TYPES), ready, f"data-{k}", rng
            )
            rec.attach(vol, vm, vol.draft.current.start + 5 * jitter(rng, 1, 10))
            vm.volumes.append(vol)
            ready = vol.draft.current.start + MINUTE
        rec.floating_ip(tenant, addresses.pop(), ready + MINUTE, vm)
        if at < span.start:
            pre_existing.update({vm.rid, *(v.rid for v in vm.volumes)})
            if vm.fip is not None:
                pre_existing.add(vm.fip.rid)
        instances.append(vm)
    return instances, pre_existing


def _delete_with_its_volumes(rec: Recorder, vm: Handle, delete_at: datetime, rng: random.Random) -> None:
    """The server deleted, then its floating IP released and its volumes deleted."""
    done = rec.delete_instance(vm, max(delete_at, vm.draft.current.start + MINUTE), rng)
    if vm.fip is not None:
        rec.release(vm.fip, done + jitter(rng, 10, 120))
    for vol in vm.volumes:
        rec.delete_volume(vol, done + jitter(rng, 10, 300), rng)


def _extend_then_retype(rec: Recorder, volume: Handle, span: Span, rng: random.Random) -> None:
    """A volume doubled in size in the month's second third, then retyped an hour or more later."""
    lo, hi = span.fraction(0.3, 0.45)
    if not span.ok(hi):
        return
    at = rec.extend(
        volume,
        max(span.profile.draw(rng, lo, hi), volume.draft.current.start + MINUTE),
        2 * (volume.draft.current.size_gb or 0),
        rng,
    )
    current = volume.draft.current.volume_type_id
    others = [t for t in VOLUME_TYPES if rec.vtypes[t].id != current]
    lo, hi = span.fraction(0.5, 0.65)
    rec.retype(volume, max(span.profile.draw(rng, lo, hi), at + HOUR), rng.choice(others), rng)


def _spare_volume_transferred(
    rec: Recorder, tenant: Tenant, next_tenant: Tenant, span: Span, rng: random.Random
) -> None:
    """A spare volume, offered mid-month to the next tenant."""
    at = span.profile.draw(rng, span.start, span.start + (span.end - span.start) / 4)
    spare = rec.volume(tenant, rng.choice((50, 100, 200)), rng.choice(VOLUME_TYPES), at, "spare", rng)
    lo, hi = span.fraction(0.4, 0.6)
    if span.ok(hi):
        at = max(span.profile.draw(rng, lo, hi), spare.draft.current.start + MINUTE)
        # One transfer in four is cancelled by its owner instead of accepted.
        rec.transfer(spare, next_tenant, at, rng, accepted=rng.random() >= 1 / 4)


def _instance_ops(rec: Recorder, vm: Handle, n: int, span: Span, limit: datetime, rng: random.Random) -> None:
    """Power cycles, a resize and a shelve, one after another, never overlapping."""
    ops: list[str] = ["cycle"] * rng.randint(1, 3)
    if n == 0 or rng.random() < 1 / 2:
        ops.append("resize")
    if n == 1 or rng.random() < 1 / 3:
        ops.append("shelve")
    begin = max(vm.draft.current.start, span.start) + HOUR
    starts = sorted(span.profile.draw(rng, begin, limit) for _ in ops)
    rng.shuffle(ops)
    free = begin
    for op, at in zip(ops, starts, strict=True):
        at = max(at, free + 10 * MINUTE)
        if at >= limit - 12 * HOUR:
            break
        if op == "cycle":
            off = rec.power_off(vm, at, rng)
            free = rec.power_on(vm, off + jitter(rng, 3600, 8 * 3600), rng)
        elif op == "resize":
            free = rec.resize(vm, at, RESIZE_TO[vm_flavor(rec, vm)], rng)
        else:
            free = rec.shelve(vm, at, rng)
            back = free + jitter(rng, 86400, 4 * 86400)
            if back < limit - HOUR and rng.random() < 1 / 2:
                free = rec.unshelve(vm, back, rng)
            else:
                return


def vm_flavor(rec: Recorder, vm: Handle) -> str:
    flavor_id = vm.draft.current.flavor_id
    return next(name for name, f in rec.flavors.items() if f.id == flavor_id)


# -- Gardener ------------------------------------------------------------------------------------------


class Shoot:
    """One Gardener shoot: its workers, claims and load balancers in a tenant."""

    def __init__(
        self,
        rec: Recorder,
        tenant: Tenant,
        name: str,
        flavor: str,
        bfv: bool,
        rng: random.Random,
        addresses: AddressPool,
    ) -> None:
        self.rec = rec
        self.tenant = tenant
        self.name = name
        self.flavor = flavor
        self.bfv = bfv
        self.rng = rng
        self.addresses = addresses
        self.workers: list[Handle] = []
        self.claims: list[Handle] = []
        self.lbs: list[Handle] = []
        self.size = rng.randint(3, 4)
        self._count = 0

    def infra(self, at: datetime, teardown: bool = False) -> None:
        kinds = ("network", "subnet", "router", "security_group")
        for k, kind in enumerate(kinds):
            phase = "delete" if teardown else "create"
            rid = f"{self.tenant.ids.getrandbits(128):032x}"
            if not teardown:
                self.rec.emit(
                    at + k * self.rec_second(),
                    f"{kind}.{phase}.start",
                    "neutron",
                    self.tenant,
                    resource_id=rid,
                )
            self.rec.emit(
                at + (k + 1) * self.rec_second(),
                f"{kind}.{phase}.end",
                "neutron",
                self.tenant,
                resource_id=rid,
            )
        if not teardown:
            self.rec.emit(at + 6 * self.rec_second(), "router.interface.create", "neutron", self.tenant)
            self.rec.emit(
                at + 7 * self.rec_second(), "security_group_rule.create.end", "neutron", self.tenant
            )

    @staticmethod
    def rec_second() -> timedelta:
        return timedelta(seconds=1)

    def worker(self, at: datetime) -> Handle:
        self._count += 1
        root = None
        if self.bfv:
            root = self.rec.volume(self.tenant, 50, "ssd", at, f"{self.name}-root-{self._count}", self.rng)
            at = root.draft.current.start + jitter(self.rng, 2, 10)
        vm = self.rec.boot(
            self.tenant,
            self.flavor,
            at,
            f"shoot--{self.name}-worker-{self._count}",
            _host(self.rng),
            self.rng,
        )
        if root is not None:
            self.rec.attach(root, vm, vm.draft.current.start + jitter(self.rng, 1, 5))
            vm.volumes.append(root)
        self.workers.append(vm)
        return vm

    def drop_worker(self, vm: Handle, at: datetime) -> datetime:
        done = self.rec.delete_instance(vm, max(at, vm.draft.current.start + self.rec_second()), self.rng)
        for vol in vm.volumes:
            done = self.rec.delete_volume(
                vol,
                max(done + jitter(self.rng, 5, 30), vol.draft.current.start + self.rec_second()),
                self.rng,
            )
        self.workers.remove(vm)
        return done

    def loadbalancer(self, at: datetime) -> Handle:
        lb = self.rec.loadbalancer(
            self.tenant,
            at,
            f"{self.name}-lb-{len(self.lbs) + 1}",
            self.rng.randint(1, 2),
            self.rng.randint(1, 2),
            self.rng,
            self.addresses.pop(),
        )
        self.lbs.append(lb)
        return lb

    def create(self, at: datetime, workers: bool = True) -> None:
        self.infra(at)
        self.loadbalancer(at + jitter(self.rng, 10, 60))
        for n in range(2):
            self.add_claim(at + MINUTE * (3 + n))
        if workers:
            self.wake(at + 2 * MINUTE)

    def wake(self, at: datetime) -> datetime:
        for _ in range(self.size):
            at = self.worker(at).draft.current.start + jitter(self.rng, 5, 60)
        return at

    def hibernate(self, at: datetime) -> datetime:
        for vm in list(self.workers):
            at = self.drop_worker(vm, at) + jitter(self.rng, 5, 30)
        return at

    def add_claim(self, at: datetime) -> None:
        size = self.rng.choice((10, 20, 50))
        self.claims.append(
            self.rec.volume(
                self.tenant, size, self.rng.choice(VOLUME_TYPES), at, f"pvc-{self.name}", self.rng
            )
        )

    def claim_op(self, at: datetime) -> None:
        roll = self.rng.random()
        if roll < 0.4 or not self.claims:
            self.add_claim(at)
        elif roll < 0.7:
            claim = self.rng.choice(self.claims)
            if claim.draft.current.size_gb is not None and claim.draft.current.size_gb < 400:
                self.rec.extend(
                    claim,
                    max(at, claim.draft.current.start + MINUTE),
                    2 * claim.draft.current.size_gb,
                    self.rng,
                )
        else:
            claim = self.rng.choice(self.claims)
            self.claims.remove(claim)
            self.rec.delete_volume(claim, max(at, claim.draft.current.start + MINUTE), self.rng)

    def teardown(self, at: datetime) -> None:
        at = self.hibernate(at)
        for claim in list(self.claims):
            at = self.rec.delete_volume(claim, max(at, claim.draft.current.start + MINUTE), self.rng)
        self.claims.clear()
        for lb in self.lbs:
            if lb.fip is not None:
                at = (
                    self.rec.release(lb.fip, max(at, lb.fip.draft.current.start + MINUTE)) + self.rec_second()
                )
            at = self.rec.delete_loadbalancer(lb, max(at, lb.draft.current.start + MINUTE), self.rng)
        self.infra(at + MINUTE, teardown=True)

    def working_day(self, day: datetime, span: Span, awake_from: datetime, awake_to: datetime) -> None:
        """Autoscaler workers and claim changes inside the hours the shoot is awake."""
        rng = self.rng
        if rng.random() < 0.6:
            up = max(day + 9 * HOUR + jitter(rng, 0, 3 * 3600), awake_from + 10 * MINUTE)
            down = day + 15 * HOUR + jitter(rng, 0, 3 * 3600)
            if down < awake_to - 20 * MINUTE and span.ok(down):
                extra = [self.worker(up + k * jitter(rng, 60, 600)) for k in range(rng.randint(1, 2))]
                for vm in extra:
                    down = self.drop_worker(vm, max(down, vm.draft.current.start + MINUTE)) + MINUTE
        for _ in range(rng.randint(1, 2)):
            at = span.profile.draw(
                rng, max(day + 8 * HOUR, awake_from + 15 * MINUTE), min(day + 18 * HOUR, awake_to - HOUR)
            )
            if span.ok(at) and awake_from < at < awake_to:
                self.claim_op(at)


def gardener_alpha(
    rec: Recorder, tenant: Tenant, span: Span, rng: random.Random, addresses: AddressPool
) -> None:
    prod = Shoot(rec, tenant, "api-prod", "m1.xlarge", False, rng, addresses)
    prod.create(span.start + jitter(rng, 600, 3000))
    rolling_day = _pick_working_day(span, rng, 0.25, 0.65)
    second_lb = span.start + (span.end - span.start) * rng.uniform(0.15, 0.45)
    listener = span.start + (span.end - span.start) * rng.uniform(0.35, 0.8)
    for day in span.days():
        if day == rolling_day:
            at = day + 10 * HOUR + jitter(rng, 0, 3600)
            for old in list(prod.workers):
                new = prod.worker(at)
                at = prod.drop_worker(old, new.draft.current.start + jitter(rng, 300, 600)) + MINUTE
        if is_working_day(day) and day > span.start:
            prod.working_day(day, span, day, day + DAY)
    if span.ok(second_lb):
        prod.loadbalancer(second_lb)
    if span.ok(listener):
        rec.add_listener(prod.lbs[0], listener)

    dev = Shoot(rec, tenant, "api-dev", "c1.large", True, rng, addresses)
    dev_created = span.start + jitter(rng, 3600, 5400)
    dev.create(dev_created, workers=False)
    for day in span.days():
        if not is_working_day(day):
            continue
        wake = day + 7 * HOUR + jitter(rng, 0, 300)
        sleep = day + 19 * HOUR + jitter(rng, 0, 300)
        if not span.ok(sleep) or wake < dev_created + HOUR:
            continue
        dev.wake(wake)
        dev.working_day(day, span, wake + 30 * MINUTE, sleep - 30 * MINUTE)
        dev.hibernate(sleep)


def gardener_beta(
    rec: Recorder, tenant: Tenant, span: Span, rng: random.Random, addresses: AddressPool
) -> None:
    batch = Shoot(rec, tenant, "batch", "m1.large", False, rng, addresses)
    created = span.start + DAY * rng.randint(1, 7) + 8 * HOUR + jitter(rng, 0, 8 * 3600)
    torn = span.start + DAY * rng.randint(17, 26) + 9 * HOUR + jitter(rng, 0, 6 * 3600)
    if not span.ok(created + 6 * HOUR):
        return
    batch.create(created)
    for day in span.days():
        if is_working_day(day) and day > created and day + DAY < min(torn, span.last):
            batch.working_day(day, span, day, day + DAY)
    if span.ok(torn):
        batch.teardown(torn)


def _pick_working_day(span: Span, rng: random.Random, lo: float, hi: float) -> datetime | None:
    a, b = span.fraction(lo, hi)
    days = [d for d in span.days() if a <= d < b and is_working_day(d)]
    return rng.choice(days) if days else None


# -- CI --------------------------------------------------------------------------------------------------


def ci(rec: Recorder, tenant: Tenant, span: Span, rng: random.Random) -> None:
    """Weekday bursts of short-lived runners."""
    for day in span.days():
        if not is_working_day(day):
            continue
        for _ in range(rng.randint(4, 8)):
            at = span.profile.draw(rng, day, day + DAY)
            for k in range(rng.randint(2, 5)):
                start = at + k * jitter(rng, 1, 20)
                life = jitter(rng, 180, 2400)
                if not span.ok(start + life):
                    continue
                vm = rec.boot(
                    tenant,
                    rng.choice(("m1.small", "m1.medium")),
                    start,
                    f"ci-runner-{rng.getrandbits(24):06x}",
                    _host(rng),
                    rng,
                )
                rec.delete_instance(vm, vm.draft.current.start + life, rng)
