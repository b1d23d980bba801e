"""The ingest metrics' label values: event types, resource types and states from known sets.

A caller chooses the ``event_type``, ``resource_type`` and ``state`` it posts, so
none of them is a label value as it came: an event type outside the mapped and
correction types, a (platform, resource type) pair not registered in
``resource_types`` (read at most every ``ttl_s``, at once after a PUT through the
pipeline), a platform no registered type names and a state outside the known
states are all counted as ``other``.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable
from typing import Protocol

import anyio

from tally.core import KNOWN_EVENT_TYPES, KNOWN_STATES, OTHER, bounded
from tally.store import BatchOutcome, CatalogRole, ProjectionRole

from . import _metrics as metrics

log = logging.getLogger(__name__)


class RegisteredTypes:
    """The registered (platform, resource_type) pairs, as label values."""

    def __init__(self, store: CatalogRole, *, ttl_s: float = 30.0) -> None:
        self._store = store
        self._ttl_s = ttl_s
        self._pairs: frozenset[tuple[str, str]] = frozenset()
        self._platforms: frozenset[str] = frozenset()
        self._read_at: float | None = None

    async def refresh_if_stale(self) -> None:
        if self._read_at is not None and time.monotonic() - self._read_at < self._ttl_s:
            return
        self.use((t.platform, t.resource_type) for t in await self._store.list_resource_types())

    def use(self, pairs: Iterable[tuple[str, str]]) -> None:
        self._pairs = frozenset(pairs)
        self._platforms = frozenset(platform for platform, _ in self._pairs)
        self._read_at = time.monotonic()

    def invalidate(self) -> None:
        self._read_at = None

    def labels(self, platform: str, resource_type: str) -> tuple[str, str]:
        """(platform, resource_type) as label values."""
        return (
            bounded(platform, self._platforms),
            resource_type if (platform, resource_type) in self._pairs else OTHER,
        )


def count_outcome(outcome: BatchOutcome, types: RegisteredTypes) -> None:
    # One inc per label set: a batch is mostly a few kinds of event.
    ingested = Counter(
        (
            *types.labels(e.platform, e.resource_type),
            e.cloud,
            bounded(e.event_type, KNOWN_EVENT_TYPES),
            e.source,
        )
        for e in outcome.inserted
    )
    for (platform, resource_type, cloud, event_type, stamped), count in ingested.items():
        metrics.EVENTS_INGESTED.labels(
            platform=platform,
            cloud=cloud,
            resource_type=resource_type,
            event_type=event_type,
            source=stamped,
        ).inc(count)
    for cloud, count in Counter(e.cloud for e in outcome.duplicates).items():
        metrics.EVENTS_DEDUPLICATED.labels(cloud=cloud).inc(count)
    for cloud, count in Counter(k.cloud for k in outcome.replayed).items():
        metrics.PROJECTION_REPLAYS.labels(cloud=cloud).inc(count)


class GaugeStore(ProjectionRole, CatalogRole, Protocol):
    """What the current resources gauge reads: the projection's counts, the registered types' labels."""


async def refresh_current_resources(store: GaugeStore) -> None:
    """Set the tally_current_resources gauge from the store's grouped counts (stale label sets dropped)."""
    types = RegisteredTypes(store)
    await types.refresh_if_stale()
    grouped: Counter[tuple[str, str, str, str]] = Counter()
    for platform, cloud, resource_type, state, count in await store.current_resource_counts():
        platform_label, type_label = types.labels(platform, resource_type)
        grouped[(platform_label, cloud, type_label, bounded(state, KNOWN_STATES))] += count
    metrics.CURRENT_RESOURCES.clear()
    for (platform, cloud, resource_type, state), count in grouped.items():
        metrics.CURRENT_RESOURCES.labels(
            platform=platform, cloud=cloud, resource_type=resource_type, state=state
        ).set(count)


async def keep_current_resources_fresh(store: GaugeStore, every_s: float) -> None:
    """Refresh the tally_current_resources gauge every ``every_s`` seconds until cancelled
    (``TALLY_REPORTING_METRICS_REFRESH_S``); a failed refresh is logged and retried next time."""
    while True:
        try:
            await refresh_current_resources(store)
        except Exception as exc:  # the gauge must not take the daemon down with a database hiccup
            log.warning("current resources gauge refresh failed error=%s", exc)
        await anyio.sleep(every_s)
