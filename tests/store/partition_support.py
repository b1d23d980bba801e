"""A populated store for the partition and retention tests, and the answers its reads give.

``populate`` writes a few thousand events of a few hundred resources across June to November 2026
(creates, resizes, power changes, project moves, deletes, revivals, late arrivals in later batches), plus a
handful dated in 1990 and 2090 that no month partition covers. ``answers`` is what the reads a user
sees return (events pages, lifecycles, projection rows, usage per month), for comparing before and
after a migration or a retention round.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tally.core import (
    Event,
    ResourceKey,
    ResourceRow,
    UsageLine,
    UsageWindow,
    lifecycle,
    parse_event,
    resource_usage,
)
from tally.core.internals import Lifecycle
from tally.store import EventFilter, ResourceFilter, Store, UsageScope

MONTHS = [datetime(2026, m, 1, tzinfo=UTC) for m in range(6, 13)]  # June .. December (the end)
UPTO = datetime(2026, 12, 15, tzinfo=UTC)
FAR = ["1990-03-04T05:06:07Z", "2090-07-08T09:10:11Z"]
FLAVORS = [
    {"vcpus": 1, "ram_gb": 2, "disk_gb": 10, "flavor": "m1.small"},
    {"vcpus": 4, "ram_gb": 8, "disk_gb": 40, "flavor": "m1.large"},
]


def _event(n: int, at: datetime | str, event_type: str, rid: str, project: str, **payload: Any) -> Event:
    stamp = at if isinstance(at, str) else at.isoformat().replace("+00:00", "Z")
    return parse_event(
        {
            "event_id": f"ev-{n}",
            "timestamp": stamp,
            "event_type": event_type,
            "platform": "openstack",
            "cloud": "os-b" if rid.endswith(("0", "5")) else "os-a",
            "resource_type": "instance",
            "resource_id": rid,
            "project_id": project,
            "payload": payload,
        }
    )


def history(rng: random.Random, first: int, rid: str) -> list[Event]:
    """One resource's events, numbered from ``first``."""
    span = (MONTHS[-1] - MONTHS[0]).total_seconds()
    at = MONTHS[0] + timedelta(seconds=rng.uniform(0, span * 0.7))
    project = rng.choice(["p1", "p2", "p3"])
    size = rng.choice(FLAVORS)
    events = [_event(first, at, "compute.instance.create.end", rid, project, state="active", size=size)]
    for _ in range(rng.randint(0, 8)):
        at += timedelta(hours=rng.uniform(1, 24 * 20))
        if at >= MONTHS[-1]:
            return events
        n = first + len(events)
        kind = rng.random()
        if kind < 0.3:
            size = rng.choice(FLAVORS)
            events.append(
                _event(n, at, "compute.instance.resize.end", rid, project, state="active", size=size)
            )
        elif kind < 0.6:
            state = rng.choice(["active", "shutoff"])
            events.append(_event(n, at, "compute.instance.power_off", rid, project, state=state))
        elif kind < 0.75:
            project = rng.choice(["p1", "p2", "p3"])
            events.append(_event(n, at, "sync.update", rid, project, state="active"))
        else:
            events.append(_event(n, at, "compute.instance.delete.end", rid, project))
            if rng.random() < 0.6:
                return events
            # Revived a month or two later: a key that ended in one month and lives again in another.
            at += timedelta(days=rng.uniform(30, 70))
            if at >= MONTHS[-1]:
                return events
            events.append(_event(n + 1, at, "sync.create", rid, project, state="active", size=size))
    return events


async def populate(store: Store, *, resources: int = 800, seed: int = 7) -> int:
    """Write the events (see the module) in batches of shuffled order; the number written."""
    rng = random.Random(seed)
    events: list[Event] = []
    for r in range(resources):
        events.extend(history(rng, len(events) + 1000 * r, f"vm-{r:04d}"))
    for i, stamp in enumerate(FAR):
        create = "compute.instance.create.end"
        events.append(_event(900_000 + i, stamp, create, f"far-{i}", "p1", state="active", size=FLAVORS[0]))
    rng.shuffle(events)
    received = datetime(2026, 11, 30, tzinfo=UTC)
    for start in range(0, len(events), 250):
        received += timedelta(seconds=1)
        await store.write_batch(events[start : start + 250], received_at=received)
    return len(events)


@dataclass
class Answers:
    events: list[dict[str, Any]]
    lifecycles: dict[ResourceKey, Lifecycle]
    rows: dict[ResourceKey, ResourceRow]
    usage: dict[datetime, dict[ResourceKey, dict[tuple[str, str], UsageLine]]]


async def all_events(store: Store) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    after = None
    while True:
        page = await store.list_events(EventFilter(), limit=700, after=after)
        out.extend(e.to_wire() | {"received_at": e.received_at} for e in page.items)
        if page.next_key is None:
            return out
        after = page.next_key


async def all_rows(store: Store) -> dict[ResourceKey, ResourceRow]:
    rows: dict[ResourceKey, ResourceRow] = {}
    after = None
    while True:
        page = await store.list_resources(ResourceFilter(status="all"), limit=500, after=after)
        rows.update((r.key, r) for r in page.items)
        if page.next_key is None:
            return rows
        after = page.next_key


async def month_usage(store: Store, month: datetime) -> dict[ResourceKey, dict[tuple[str, str], UsageLine]]:
    end = datetime(month.year + month.month // 12, month.month % 12 + 1, 1, tzinfo=UTC)
    window = UsageWindow(month, end, UPTO)
    out: dict[ResourceKey, dict[tuple[str, str], UsageLine]] = {}
    after = None
    while True:
        page = await store.usage_histories(UsageScope(month, end), limit=300, after=after)
        for key, events in page.items:
            lines = resource_usage(events, window)
            if lines:
                out[key] = lines
        if page.next_key is None:
            return out
        after = page.next_key


async def answers(store: Store) -> Answers:
    rows = await all_rows(store)
    lifecycles = {key: lifecycle(await store.lifecycle_events(key)) for key in rows}
    usage = {month: await month_usage(store, month) for month in MONTHS[:-1]}
    return Answers(await all_events(store), lifecycles, rows, usage)
