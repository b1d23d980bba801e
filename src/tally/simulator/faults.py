"""Notification faults: switches that change what reaches the bus, never the world or the oracle.

Each switch draws its picks from its own seeded stream over the month's base
schedule (the notifications with their message ids already drawn), so switching
one on changes neither the world, nor the base notifications, nor another
switch's picks. The spec's six switches plus two of ours:

- ``pre-existing``: 1/3 of classic instances (with their volumes and FIP) exist from 1-30 days
  before the month; their history is on the bus, published first. The world always holds them (so
  the oracle never changes), which makes this switch the default behaviour, named.
- ``missing-create``: those picks' pre-period notifications are dropped; the create is lost for good.
- ``duplicates``: 1/20 of billable notifications re-sent with the same message_id 10 later.
- ``reordering``: for 1/10 of resources with >= 2 billable transitions, the first is published
  right after the second.
- ``refused-shapes``: per 400 draws over billable notifications, 1 oversized twin (> 1 MiB),
  2 truncated twins, 20 versioned twins (nova only); twins have their own message ids.
- ``held-back``: 1/20 of billable notifications withheld until ``POST /release``.
- ``missing-delete``: 1/20 of billable deletes never published.
- ``lost-update``: 1/20 of billable updates never published.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from tally.core import Category, category_of

from ._streams import draw_uuid, stream
from .notifications import Notification, tally_type

FAULTS = (
    "pre-existing",
    "missing-create",
    "duplicates",
    "reordering",
    "refused-shapes",
    "held-back",
    "missing-delete",
    "lost-update",
)


class FaultError(ValueError):
    """A fault set that cannot be used; the message names the switch."""


def parse_faults(spec: str | Iterable[str] | None) -> frozenset[str]:
    """``"a,b"`` or an iterable of names to a checked set; unknown names and bad pairs refused."""
    if spec is None:
        return frozenset()
    names = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else [str(s).strip() for s in spec]
    chosen = frozenset(n for n in names if n)
    unknown = sorted(chosen - set(FAULTS))
    if unknown:
        raise FaultError(f"unknown fault {unknown[0]!r}; known: {', '.join(FAULTS)}")
    if {"pre-existing", "missing-create"} <= chosen:
        raise FaultError("faults pre-existing and missing-create cannot be combined")
    return chosen


@dataclass
class FaultOutcome:
    published: list[Notification]
    held_back: list[Notification]
    touched: dict[str, set[str]] = field(default_factory=dict)


def _category(n: Notification) -> Category:
    return category_of(tally_type(n.event_type))


def apply_faults(
    base: list[Notification],
    faults: frozenset[str],
    *,
    seed: int,
    period: str,
    period_from: datetime,
    pre_existing: frozenset[str],
) -> FaultOutcome:
    """The bus of the month for ``faults``; ``base`` is in publication order with ids drawn."""
    touched: dict[str, set[str]] = defaultdict(set)
    dropped: set[int] = set()
    held: list[Notification] = []

    def rng(name: str) -> random.Random:
        return stream(seed, f"fault/{name}", period)

    billable = [n for n in base if n.billable]
    if "pre-existing" in faults:
        for n in base:
            if n.timestamp < period_from and n.resource_id in pre_existing:
                touched[n.resource_id].add("pre-existing")
    if "missing-create" in faults:
        for n in base:
            if n.timestamp < period_from:
                dropped.add(id(n))
                if n.resource_id in pre_existing:
                    touched[n.resource_id].add("missing-create")
    for name, wanted in (("missing-delete", Category.DELETE), ("lost-update", Category.UPDATE)):
        if name in faults:
            r = rng(name)
            for n in billable:
                if _category(n) is wanted and r.random() < 1 / 20:
                    dropped.add(id(n))
                    touched[n.resource_id].add(name)
    if "held-back" in faults:
        r = rng("held-back")
        for n in billable:
            if r.random() < 1 / 20 and id(n) not in dropped:
                dropped.add(id(n))
                held.append(n)
                touched[n.resource_id].add("held-back")

    survivors = [n for n in base if id(n) not in dropped]
    if "reordering" in faults:
        survivors = _reorder(survivors, billable, rng("reordering"), touched, dropped)

    after: dict[int, list[Notification]] = defaultdict(list)
    position = {id(n): i for i, n in enumerate(survivors)}
    if "duplicates" in faults:
        r = rng("duplicates")
        for n in billable:
            if r.random() < 1 / 20 and id(n) in position:
                target = min(position[id(n)] + 10, len(survivors) - 1)
                after[target].append(n.copy(published_at=survivors[target].published_at))
                touched[n.resource_id].add("duplicates")
    if "refused-shapes" in faults:
        r = rng("refused-shapes")
        for n in billable:
            draw = r.randrange(400)
            shape = (
                "oversized" if draw == 0 else "truncated" if draw <= 2 else "versioned" if draw <= 22 else ""
            )
            twin_id = draw_uuid(r) if shape else ""
            if not shape or id(n) not in position or (shape == "versioned" and n.service != "nova"):
                continue
            i = position[id(n)]
            after[i].insert(0, n.copy(message_id=twin_id, shape=shape, billable=False))
            touched[n.resource_id].add("refused-shapes")

    published: list[Notification] = []
    for i, n in enumerate(survivors):
        published.append(n)
        published.extend(after.get(i, ()))
    return FaultOutcome(published, held, dict(touched))


def _reorder(
    survivors: list[Notification],
    billable: list[Notification],
    r: random.Random,
    touched: dict[str, set[str]],
    dropped: set[int],
) -> list[Notification]:
    firsts: dict[str, list[Notification]] = defaultdict(list)
    for n in billable:
        if len(firsts[n.resource_id]) < 2:
            firsts[n.resource_id].append(n)
    moves: dict[int, Notification] = {}
    for rid in firsts:
        pair = firsts[rid]
        if len(pair) < 2 or r.random() >= 1 / 10:
            continue
        first, second = pair
        if id(first) in dropped or id(second) in dropped:
            continue
        moves[id(second)] = first.copy(published_at=second.published_at)
        touched[rid].add("reordering")
    moved = {id(pair[0]) for pair in firsts.values() if len(pair) == 2 and id(pair[1]) in moves}
    out: list[Notification] = []
    for n in survivors:
        if id(n) in moved:
            continue
        out.append(n)
        if id(n) in moves:
            out.append(moves[id(n)])
    return out
