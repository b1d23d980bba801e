"""The backbone: the store and what every actor after it shares (the ingest pipeline, the sync service).

It is one ``tally.actors.Resource`` named ``store``, first in the tree: it opens the store, applies
pending migrations when ``TALLY_REPORTING_MIGRATE_ON_START`` is on (asking systemd for more start
time meanwhile, since a long migration must not be killed by the unit's start timeout), and builds the one
``IngestPipeline`` that the Reporting API, the collector's in-process sink and the reconciliation all
write through, and the ``SyncService`` of the configured clouds. Building them here, once the store is
open, keeps one instance of each for the life of the store.

Its readiness checks: ``store`` (the database answers and takes a write that changes nothing; failing
longer than
``TALLY_REPORTING_UNHEALTHY_THRESHOLD_S`` also turns ``/healthz`` 503) and ``schema`` (not behind this build's
migrations; with migrations off, ``/readyz`` stays 503 until an operator runs ``tally migrate up``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from tally.actors import Resource
from tally.config import Settings
from tally.http import CheckResult, Readiness
from tally.ingest import IngestPipeline
from tally.store import Store, connection_deadline, open_store

from ._notify import Notifier

if TYPE_CHECKING:
    from tally.reconcile import SyncService

log = logging.getLogger(__name__)

STORE_CHECK_WAIT_S = 1.5  # within the readiness checks' 2 s


@dataclass(frozen=True, slots=True)
class Backbone:
    """Invariant: ``pipeline`` and ``sync`` write to ``store``. ``sync`` None = no clouds config."""

    store: Store
    pipeline: IngestPipeline
    sync: SyncService | None


def _dialect(settings: Settings) -> str:
    return "postgresql" if settings.reporting_db_url is not None else "sqlite"


@asynccontextmanager
async def open_backbone(settings: Settings, notifier: Notifier | None = None) -> AsyncIterator[Backbone]:
    """Open the store (migrated when configured) and build the shared pipeline and sync service."""
    async with open_store(settings.store_url, max_conns=settings.reporting_db_max_conns) as store:
        if settings.reporting_migrate_on_start:
            async with anyio.create_task_group() as tg:
                if notifier is not None:
                    notifier.notify("STATUS=applying migrations")
                    tg.start_soon(notifier.keep_extending_start)
                applied = await store.migrate_up()
                tg.cancel_scope.cancel()
            status = await store.schema_status()
            log.info(
                "store open dialect=%s schema_version=%d migrations_applied=%d",
                _dialect(settings),
                status.current,
                len(applied),
            )
        else:
            status = await store.schema_status()
            log.log(
                logging.WARNING if status.behind else logging.INFO,
                "store open dialect=%s schema_version=%d latest=%d migrate_on_start=false",
                _dialect(settings),
                status.current,
                status.latest,
            )
        pipeline = IngestPipeline(store, require_size_schema=settings.ingest_require_size_schema)
        sync: SyncService | None = None
        if settings.reporting_clouds_config is not None:
            from tally.reconcile import SyncService

            sync = SyncService.from_settings(settings, store=store, pipeline=pipeline)
            await sync.restore_last_completed()
        yield Backbone(store, pipeline, sync)


def backbone_resource(
    settings: Settings, readiness: Readiness, notifier: Notifier | None = None
) -> Resource[Backbone]:
    """The ``store`` child, with its ``store`` and ``schema`` readiness checks registered."""
    backbone: Resource[Backbone] = Resource("store", lambda: open_backbone(settings, notifier))
    dialect = _dialect(settings)

    async def store_answers() -> CheckResult:
        try:
            store = backbone.value.store
        except RuntimeError:
            return CheckResult(False, "the store is not open")
        # A write that changes nothing: raises when the database does not answer or cannot write (a
        # read-only PostgreSQL, a full disk under SQLite). The wait for a pooled connection ends before
        # the check's own timeout, so that the detail says why (a server away, a busy pool).
        with connection_deadline(time.monotonic() + STORE_CHECK_WAIT_S):
            await store.write_check()
        return CheckResult(True, f"{dialect} answers and takes writes")

    async def schema_current() -> CheckResult:
        try:
            store = backbone.value.store
        except RuntimeError:
            return CheckResult(False, "the store is not open")
        # Under the store check's bound too: while the database is away /readyz answers within it,
        # not at the checks' 2 s timeout.
        with connection_deadline(time.monotonic() + STORE_CHECK_WAIT_S):
            status = await store.schema_status()
        if status.behind:
            return CheckResult(
                False,
                f"schema at version {status.current}, this build needs {status.latest}: "
                "run `tally migrate up` (TALLY_REPORTING_MIGRATE_ON_START is off)",
            )
        return CheckResult(True, f"schema at version {status.current}")

    async def clouds_config() -> CheckResult:
        try:
            sync = backbone.value.sync
        except RuntimeError:
            return CheckResult(False, "the store is not open")
        if sync is None:
            return CheckResult(True, "no clouds config")
        clouds = await sync.readiness_check()
        return CheckResult(clouds.ready, clouds.detail, {"clouds": clouds.clouds})

    readiness.register("store", store_answers, unhealthy_after_s=settings.reporting_unhealthy_threshold_s)
    readiness.register("schema", schema_current)
    if settings.reporting_clouds_config is not None:
        readiness.register("clouds", clouds_config)
    return backbone
