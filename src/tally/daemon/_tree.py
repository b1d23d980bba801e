"""The actor tree: which actors ``tally run`` starts for the settings, in start order.

This is the one place where the daemon's actors are composed; the parts they run (the ingest pipeline,
the sync service, the collector and its sink) are built by the composition root, ``tally.app``.
Children start in list order (each once the previous said it is ready) and stop in reverse:

1. ``store`` (a ``tally.actors.HeldResource``, see ``_backbone``): the store, migrated at start when
   ``TALLY_REPORTING_MIGRATE_ON_START``, and the ingest pipeline and sync service built over it. Open
   whenever something below needs it: the Reporting API, the collector's in-process sink, or a clouds
   config.
2. ``current-resources``: refreshes the ``tally_current_resources`` gauge from the store every
   ``TALLY_REPORTING_METRICS_REFRESH_S`` (with the store and metrics on).
3. ``events-upkeep`` with a PostgreSQL store: the monthly partitions of events made ahead, retention
   and their gauges every ``TALLY_EVENTS_MAINTENANCE_INTERVAL_S`` (``_events_upkeep``).
4. ``http``: the Reporting API with ``/healthz``, ``/readyz`` and ``/metrics`` on the same port; only
   the health endpoints when ``TALLY_REPORTING_ENABLED=false``; then ``http-workers`` when
   ``TALLY_REPORTING_HTTP_WORKERS`` (or the host's default) asks for more than one process
   (``_workers``): they serve the API on the same socket.
5. ``collector`` when ``TALLY_OSC_AMQP_URL`` is set (``_collector``).
6. ``sync-scheduler:<cloud>``, one per cloud of ``TALLY_REPORTING_CLOUDS_CONFIG``; told-instant mode
   when ``TALLY_REPORTING_SYNC_CLOCK_URL`` is set. Its mailbox is made with the tree: ``http`` asks
   through it for the runs of ``POST /internal/sync`` (``tally.reconcile.SchedulerRunner``).
7. ``period-closer:<cloud>``, one per cloud of that config when ``TALLY_BILLING_PRICE_LIST`` names a
   stored price list: closes the cloud's due months and records their corrections.

Readiness checks are registered by whoever owns the dependency: ``store``, ``schema`` and ``clouds``
by the backbone, ``collector`` by the collector, ``actors`` by ``run_daemon``.
"""

from __future__ import annotations

import socket
from datetime import timedelta

import anyio
from prometheus_client import REGISTRY
from quart import Quart

from tally.actors import ActorContext, ChildSpec, HeldResource
from tally.config import Settings, load_clouds_config
from tally.http import Readiness
from tally.ingest import IngestPipeline, keep_current_resources_fresh
from tally.reconcile import RunRequests, SchedulerRunner, run_cloud_scheduler, run_requests

from ._backbone import Backbone, backbone_resource
from ._collector import collector_child
from ._events_upkeep import events_upkeep_child
from ._frontend import health_app, http_front_end, reporting_app
from ._notify import Notifier
from ._sizing import http_workers
from ._workers import WorkersMerged, WorkersPlace, http_workers_child


def needs_store(settings: Settings) -> bool:
    """True when an actor of the tree reads or writes the store."""
    in_process_sink = settings.osc_amqp_url is not None and not settings.osc_reporting_url
    return settings.reporting_enabled or in_process_sink or settings.reporting_clouds_config is not None


def serves_with_workers(settings: Settings) -> bool:
    """True when the Reporting API is served by HTTP workers besides the main process (``_workers``)."""
    return settings.reporting_enabled and needs_store(settings) and http_workers(settings) > 1


def build_tree(
    settings: Settings,
    readiness: Readiness,
    notifier: Notifier | None = None,
    *,
    listening: socket.socket | None = None,
) -> list[ChildSpec]:
    """The supervisor's children for ``settings``, in start order (``notifier`` hears the migrations;
    the front end first serves on ``listening`` when the start handed it a socket)."""
    children: list[ChildSpec] = []
    backbone: HeldResource[Backbone] | None = None
    if needs_store(settings):
        backbone = backbone_resource(settings, readiness, notifier or Notifier(None))
        children.append(backbone.child())
        if settings.metrics_enabled:
            children.append(_current_resources(settings, backbone))
        if settings.reporting_db_url is not None:
            children.append(events_upkeep_child(settings, backbone))

    # The schedulers' mailboxes are made here, before either end exists: the front end asks through
    # them, each cloud's scheduler takes from its own.
    clouds: list[str] = []
    if backbone is not None and settings.reporting_clouds_config is not None:
        clouds = sorted(e.cloud for e in load_clouds_config(settings.reporting_clouds_config))
    requests = {cloud: run_requests(cloud) for cloud in clouds}
    workers = serves_with_workers(settings) and listening is not None
    place = WorkersPlace()
    registry = WorkersMerged(place) if workers else REGISTRY

    def make_app() -> Quart:
        if backbone is not None and settings.reporting_enabled:
            runner = SchedulerRunner(requests) if backbone.value.sync is not None else None
            return reporting_app(settings, readiness, backbone.value, runner, registry=registry)
        return health_app(settings, readiness)

    children.append(
        http_front_end(
            make_app,
            settings.reporting_http_addr,
            settings.reporting_http_port,
            graceful_timeout_s=min(5.0, settings.shutdown_grace_s),
            sock=listening,
            shared=workers,
        )
    )
    if workers:
        assert listening is not None
        children.append(http_workers_child(settings, make_app, listening, place))
    if settings.osc_amqp_url is not None:

        def pipeline() -> IngestPipeline:
            assert backbone is not None  # needs_store holds for an in-process sink
            return backbone.value.pipeline

        children.append(collector_child(settings, readiness, pipeline))
    if backbone is not None and settings.reporting_clouds_config is not None:
        children.extend(_scheduler(settings, backbone, cloud, requests[cloud]) for cloud in clouds)
        if settings.billing_price_list is not None:
            children.extend(_period_closer(settings, backbone, cloud) for cloud in clouds)
    return children


def _current_resources(settings: Settings, backbone: HeldResource[Backbone]) -> ChildSpec:
    async def run(ctx: ActorContext) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                keep_current_resources_fresh, backbone.value.store, settings.reporting_metrics_refresh_s
            )
            ctx.started()
            await ctx.wait_stopping()
            tg.cancel_scope.cancel()

    return ChildSpec("current-resources", run)


def _period_closer(settings: Settings, backbone: HeldResource[Backbone], cloud: str) -> ChildSpec:
    from tally.usage import run_period_closer

    async def run(ctx: ActorContext) -> None:
        assert settings.billing_price_list is not None  # the child exists only with a price list
        await run_period_closer(
            backbone.value.store,
            cloud,
            settings.billing_price_list,
            ctx,
            grace=timedelta(hours=settings.billing_grace_hours),
            interval_s=settings.billing_close_interval_s,
        )

    return ChildSpec(f"period-closer:{cloud}", run)


def _scheduler(
    settings: Settings, backbone: HeldResource[Backbone], cloud: str, requests: RunRequests
) -> ChildSpec:
    async def run(ctx: ActorContext) -> None:
        service = backbone.value.sync
        assert service is not None  # built whenever a clouds config is set
        await run_cloud_scheduler(
            service, cloud, ctx, clock_url=settings.reporting_sync_clock_url, requests=requests
        )

    return ChildSpec(f"sync-scheduler:{cloud}", run)
