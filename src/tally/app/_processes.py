"""The one-shot processes' compositions: ``tally collector``'s sink with its own store, ``tally sync``'s
service. Each opens the store the settings name and migrates it when ``TALLY_REPORTING_MIGRATE_ON_START``
is on, as ``tally run`` does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from tally.config import Settings

from ._parts import pipeline_of, sync_service
from ._sinks import open_sink

if TYPE_CHECKING:
    from tally.ingest import IngestPipeline
    from tally.outbox import EventSink
    from tally.reconcile import SyncService


def _no_pipeline() -> IngestPipeline:
    raise AssertionError("the HTTP sink takes no pipeline")


@asynccontextmanager
async def open_standalone_sink(settings: Settings) -> AsyncIterator[EventSink]:
    """``tally collector``'s sink: the HTTP sink when TALLY_OSC_REPORTING_URL is set, else this
    process's ingest over the store the settings name (opened here, so the HTTP case loads no store)."""
    if settings.osc_reporting_url:
        async with open_sink(settings, _no_pipeline) as sink:
            yield sink
        return
    from tally.store import open_store

    async with open_store(settings.store_url) as store:
        if settings.reporting_migrate_on_start:
            await store.migrate_up()
        async with open_sink(settings, lambda: pipeline_of(store, settings)) as sink:
            yield sink


@asynccontextmanager
async def open_sync_service(settings: Settings) -> AsyncIterator[SyncService]:
    """``tally sync``'s service over the store the settings name, for one run in this process."""
    from tally.store import open_store

    lease_s = settings.reporting_sync_lock_lease_s
    async with open_store(settings.store_url, sync_lock_lease_s=lease_s) as store:
        if settings.reporting_migrate_on_start:
            await store.migrate_up()
        yield sync_service(settings, store=store, pipeline=pipeline_of(store, settings))
