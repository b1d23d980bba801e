"""The backbone: the store and what every actor after it shares (the ingest pipeline, the sync service).

It is one ``tally.actors.HeldResource`` named ``store``, first in the tree: it opens the store, applies
pending migrations when ``TALLY_REPORTING_MIGRATE_ON_START`` is on (asking systemd for more start
time meanwhile, since a long migration must not be killed by the unit's start timeout), and has the
composition root (``tally.app``) build the one ``IngestPipeline`` that the Reporting API, the collector's
in-process sink and the reconciliation all write through, and the ``SyncService`` of the configured
clouds. Building them here, once the store is open, keeps one instance of each for the life of the store.

Its readiness checks: ``store`` (the database answers and takes a write that changes nothing; failing
longer than
``TALLY_REPORTING_UNHEALTHY_THRESHOLD_S`` also turns ``/healthz`` 503) and ``schema`` (not behind this build's
migrations; with migrations off, ``/readyz`` stays 503 until an operator runs ``tally migrate up``).
Both are probes run in the background every ``PROBE_EVERY_S`` (``Readiness``): ``/readyz`` answers
from their last outcome, never waiting on the database itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from tally.actors import HeldResource
from tally.app import pipeline_of, sync_service
from tally.config import Settings
from tally.http import CheckResult, Readiness
from tally.ingest import IngestPipeline
from tally.store import Store, connection_deadline, open_store

from ._notify import Notifier

if TYPE_CHECKING:
    from tally.reconcile import SyncService

log = logging.getLogger(__name__)

PROBE_EVERY_S = 2.0
PROBE_DEADLINE_S = 2.0
STORE_CHECK_WAIT_S = 1.5  # within the probe's deadline, so that the detail says why it waited


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
    async with open_store(
        settings.store_url,
        max_conns=settings.reporting_db_max_conns,
        sync_lock_lease_s=settings.reporting_sync_lock_lease_s,
    ) as store:
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
        pipeline = pipeline_of(store, settings)
        sync: SyncService | None = None
        if settings.reporting_clouds_config is not None:
            sync = sync_service(settings, store=store, pipeline=pipeline)
            await sync.restore_last_completed()
        yield Backbone(store, pipeline, sync)


def backbone_resource(
    settings: Settings, readiness: Readiness, notifier: Notifier | None = None
) -> HeldResource[Backbone]:
    """The ``store`` child, with its ``store`` and ``schema`` readiness checks registered."""
    opened: list[Backbone] = []

    @asynccontextmanager
    async def opened_backbone() -> AsyncIterator[Backbone]:
        async with open_backbone(settings, notifier) as value:
            opened[:] = [value]
            try:
                # The probes' first outcomes of the open store, before the front end serves them.
                await readiness.refresh("store", "schema")
                yield value
            finally:
                opened.clear()

    backbone: HeldResource[Backbone] = HeldResource("store", opened_backbone)
    dialect = _dialect(settings)

    async def store_answers() -> CheckResult:
        if not opened:
            return CheckResult(False, "the store is not open")
        store = opened[0].store
        # A write that changes nothing: raises when the database does not answer or cannot write (a
        # read-only PostgreSQL, a full disk under SQLite). The wait for a pooled connection ends before
        # the check's own timeout, so that the detail says why (a server away, a busy pool).
        with connection_deadline(time.monotonic() + STORE_CHECK_WAIT_S):
            await store.write_check()
        return CheckResult(True, f"{dialect} answers and takes writes")

    async def schema_current() -> CheckResult:
        if not opened:
            return CheckResult(False, "the store is not open")
        store = opened[0].store
        # Under the store check's bound too: while the database is away the probe ends with the
        # reason the wait gives, not at its deadline.
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

    probe = {"every_s": PROBE_EVERY_S, "deadline_s": PROBE_DEADLINE_S}
    readiness.register(
        "store", store_answers, unhealthy_after_s=settings.reporting_unhealthy_threshold_s, **probe
    )
    readiness.register("schema", schema_current, **probe)
    if settings.reporting_clouds_config is not None:
        readiness.register("clouds", clouds_config)
    return backbone
