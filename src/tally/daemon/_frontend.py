"""The HTTP front end actor: serves one Quart app until told to stop.

The app is built when the actor starts (``make_app``), not when the tree is built, because the
Reporting API app is made over the store, which opens only when the ``store`` child started. It starts
after the store and before the collector and the schedulers, so it stops after them: a collector
whose sink is this daemon's own API (``TALLY_OSC_REPORTING_URL`` pointing here) can still flush into
it while draining. Requests in flight get the graceful timeout to finish.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable

import anyio
from prometheus_client import REGISTRY
from prometheus_client.registry import Collector
from quart import Quart

from tally.actors import ActorContext, ChildSpec
from tally.config import Settings
from tally.http import (
    Readiness,
    ReportingServices,
    SyncRunner,
    create_reporting_app,
    health_blueprint,
    keystone_tokens,
    serve_quart,
)

from ._backbone import Backbone

log = logging.getLogger(__name__)


def http_front_end(
    make_app: Callable[[], Quart],
    host: str,
    port: int,
    *,
    graceful_timeout_s: float,
    sock: socket.socket | None = None,
    shared: bool = False,
) -> ChildSpec:
    """A supervisor child named ``http`` serving the app ``make_app()`` builds on ``host:port``: on
    ``sock`` (already listening there) the first time, which it then closes, so that a restart can
    bind the port again on a socket of its own; every time when ``shared`` (the HTTP workers accept
    from it too, and the daemon closes it at its end)."""
    handed = [sock] if sock is not None else []

    async def run(ctx: ActorContext) -> None:
        app = make_app()
        first = (handed[0] if shared else handed.pop()) if handed else None
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(_serve, app, host, port, graceful_timeout_s, first, shared)
                ctx.started()
                await ctx.wait_stopping()
                tg.cancel_scope.cancel()
        finally:
            if first is not None and not shared:
                first.close()

    return ChildSpec("http", run)


def health_app(settings: Settings, readiness: Readiness) -> Quart:
    """``/healthz``, ``/readyz`` and ``/metrics`` alone: the front end when the Reporting API is off."""
    app = Quart("tally")
    app.register_blueprint(health_blueprint(readiness, metrics_enabled=settings.metrics_enabled))
    return app


def reporting_app(
    settings: Settings,
    readiness: Readiness,
    backbone: Backbone,
    sync_runner: SyncRunner | None,
    *,
    registry: Collector = REGISTRY,
) -> Quart:
    """The Reporting API over the backbone, with the health endpoints on the same port; its requested
    syncs go to ``sync_runner`` (the schedulers' mailboxes; None: no cloud configured), ``/metrics``
    answers ``registry``'s metrics."""
    services = ReportingServices(
        store=backbone.store,
        pipeline=backbone.pipeline,
        settings=settings,
        sync_runner=sync_runner,
        keystone=keystone_tokens(settings),
    )
    app = create_reporting_app(services)
    app.register_blueprint(
        health_blueprint(readiness, metrics_enabled=settings.metrics_enabled, registry=registry)
    )
    return app


async def _serve(
    app: Quart,
    host: str,
    port: int,
    graceful_timeout_s: float,
    sock: socket.socket | None,
    shared: bool,
    *,
    task_status: anyio.abc.TaskStatus[int],
) -> None:
    await serve_quart(
        app,
        host,
        port,
        graceful_timeout_s=graceful_timeout_s,
        sock=sock,
        shared=shared and sock is not None,
        task_status=task_status,
    )
