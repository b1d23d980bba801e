"""The parts, one builder each: the ingest pipeline, the sync service, the collector, the in-process sink."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tally.config import CloudEntry, Settings

if TYPE_CHECKING:
    from tally.collector import Collector, InProcessBus
    from tally.ingest import IngestPipeline
    from tally.outbox import EventSink
    from tally.reconcile import IngestsEvents, RunSettings, SyncService
    from tally.store import Store


def ingest_pipeline(store: Store, *, require_size_schema: bool) -> IngestPipeline:
    """The pipeline every writer of ``store`` goes through (the API, the collector's sink, the syncs)."""
    from tally.ingest import IngestPipeline

    return IngestPipeline(store, require_size_schema=require_size_schema)


def pipeline_of(store: Store, settings: Settings) -> IngestPipeline:
    """The pipeline of a deployment: ``TALLY_INGEST_REQUIRE_SIZE_SCHEMA`` as the settings say."""
    return ingest_pipeline(store, require_size_schema=settings.ingest_require_size_schema)


def sync_service(settings: Settings, *, store: Store, pipeline: IngestsEvents) -> SyncService:
    """The sync service of a deployment: the clouds config the settings name (none: no cloud), its
    slots from the pool's size; ``CloudsConfigError`` for a file that cannot be used."""
    from tally.reconcile import SyncService

    return SyncService.from_settings(settings, store=store, pipeline=pipeline)


def sync_service_of(
    entries: Sequence[CloudEntry],
    *,
    store: Store,
    pipeline: IngestsEvents,
    settings: RunSettings,
) -> SyncService:
    """A sync service of given clouds and run settings, uncapped (the simulator's)."""
    from tally.reconcile import SyncService

    return SyncService(entries, store=store, pipeline=pipeline, settings=settings)


def ingest_sink(pipeline: Any) -> EventSink:
    """The collector's sink into this process's ingest (``pipeline``: anything with its ``ingest``)."""
    from tally.outbox import IngestSink

    return IngestSink(pipeline)


def collector(settings: Settings, *, sink: EventSink, bus: InProcessBus | None = None) -> Collector:
    """The collector of the ``TALLY_OSC_*`` settings into ``sink``; from ``bus`` when given."""
    from tally.collector import Collector

    return Collector(settings, sink=sink, bus=bus)
