"""The collector actor of ``tally run``: oslo notifications from RabbitMQ into this daemon's record.

Present when ``TALLY_OSC_AMQP_URL`` is set. Its sink (``tally.app.open_sink``) is this daemon's own
ingest pipeline (the same one the Reporting API writes through) unless ``TALLY_OSC_REPORTING_URL``
names a Reporting API to post to. On stop it takes no more deliveries (unacked ones go back to the
queue) and gives its sender what is left of the grace to deliver what the outbox committed; what is
still there waits in the outbox for the next start.

Its readiness check ``collector`` fails while the collector cannot consume from the broker, with
the reason (the broker unreachable, a refused login or vhost), and once rows waited
``TALLY_OSC_UNHEALTHY_THRESHOLD_S`` without an accepted batch; its check ``outbox`` fails while the
outbox cannot commit a write (a full disk, a read-only file), naming the cause and the path: the last
write's outcome when younger than 5 s, else a one-page write probe, run in the background every
``OUTBOX_PROBE_EVERY_S`` (``Readiness``) so that ``/readyz`` never waits on the outbox's file.
A fault of the outbox never crashes the actor: consuming waits and resumes by itself.

The standalone ``tally collector`` serves the same checks from the same background probes
(``collector_checks``, ``standalone_app``), beside its own ``/healthz``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import anyio
from quart import Quart

from tally.actors import ActorContext, ChildSpec
from tally.app import collector as build_collector
from tally.app import open_sink
from tally.config import Settings
from tally.http import CheckResult, Readiness, health_blueprint
from tally.ingest import IngestPipeline

if TYPE_CHECKING:
    from tally.collector import Collector

OUTBOX_PROBE_EVERY_S = 2.0
OUTBOX_PROBE_DEADLINE_S = 2.0


def amqp_url_problem(settings: Settings) -> str | None:
    """What is wrong with ``TALLY_OSC_AMQP_URL`` (syntax, TLS files), or None; checked before anything
    starts. What only the broker can say (login, vhost, permissions) fails the actor instead."""
    from tally.collector import CollectorError, amqp_config

    config = amqp_config(settings)
    if config is None:
        return None
    try:
        config.address()
    except CollectorError as exc:
        return str(exc)
    return None


async def broker_refusal(settings: Settings) -> str | None:
    """What the broker refuses at start (the login, the vhost, a permission, an exchange of other
    durability, a missing exchange while required), or None: one attempt of the collector's own set-up,
    closed again at once. Deliveries it took are requeued by the broker when the connection closes. An
    unreachable broker is an outage, not a refusal: the collector actor keeps trying, as it does later."""
    from tally.collector import AmqpSource, CollectorError, Delivery, amqp_config

    config = amqp_config(settings)
    if config is None:
        return None
    send, receive = anyio.create_memory_object_stream[Delivery](math.inf)
    try:
        with send, receive:
            async with anyio.create_task_group() as tg:
                await tg.start(AmqpSource(config).serve, send)
                tg.cancel_scope.cancel()
    except CollectorError as exc:
        return str(exc)
    except ExceptionGroup as group:
        # The source's own task group nests the one refusal in a group of its own.
        leaves = list(_leaves(group))
        if len(leaves) == 1 and isinstance(leaves[0], CollectorError):
            return str(leaves[0])
        raise
    return None


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc


def collector_child(
    settings: Settings, readiness: Readiness, pipeline: Callable[[], IngestPipeline]
) -> ChildSpec:
    """The ``collector`` child; ``pipeline`` gives the in-process sink's pipeline once the store is open."""
    running: list[Collector] = []

    async def run(ctx: ActorContext) -> None:
        try:
            async with open_sink(settings, pipeline) as sink, anyio.create_task_group() as tg:
                collector = build_collector(settings, sink=sink)
                # Seen by the checks while it starts too: an outbox it cannot open yet says why.
                running[:] = [collector]
                try:
                    await tg.start(collector.serve)
                    await readiness.refresh("outbox")  # its outcome of the opened outbox
                    ctx.started()
                    await ctx.wait_stopping()
                    await collector.stop(settings.shutdown_grace_s)
                finally:
                    running.clear()
                    tg.cancel_scope.cancel()
        except ExceptionGroup as group:
            # One failure (the broker refused, no exchange): the supervisor logs it, not the group.
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise

    collector_checks(readiness, lambda: running[0] if running else None)
    return ChildSpec("collector", run)


def collector_checks(readiness: Readiness, current: Callable[[], Collector | None]) -> None:
    """Register ``collector`` and the ``outbox`` probe on ``readiness`` for the collector ``current``
    gives (None while it is not running): the daemon's actor and the standalone command alike."""

    async def healthy() -> CheckResult:
        collector = current()
        if collector is None:
            return CheckResult(False, "the collector is not running")
        health = collector.health()
        problem = collector.broker_problem()
        if problem is not None:
            # Not ready while it cannot consume; the outbox still delivers what it holds.
            return CheckResult(False, problem)
        detail = health.detail or f"outbox_depth={health.depth}"
        return CheckResult(health.healthy, detail)

    async def outbox_writes() -> CheckResult:
        collector = current()
        if collector is None:
            return CheckResult(False, "the collector is not running")
        problem = await collector.outbox_problem()
        return CheckResult(problem is None, problem or "writes commit")

    readiness.register("collector", healthy)
    readiness.register(
        "outbox", outbox_writes, every_s=OUTBOX_PROBE_EVERY_S, deadline_s=OUTBOX_PROBE_DEADLINE_S
    )


def standalone_app(collector: Collector, readiness: Readiness, *, metrics_enabled: bool = True) -> Quart:
    """The standalone collector's HTTP surface: ``/readyz`` and ``/metrics`` as the daemon serves them
    (``collector_checks`` on ``readiness``, whose prober the command runs), and a ``/healthz`` that
    says more than "the process answers": 503 once rows waited ``TALLY_OSC_UNHEALTHY_THRESHOLD_S``
    without an accepted batch, the state in which billing data piles up unseen."""
    app = Quart("tally.collector")

    @app.get("/healthz")
    async def healthz() -> tuple[dict[str, object], int]:
        health = collector.health()
        return health.to_json(), 200 if health.healthy else 503

    app.register_blueprint(health_blueprint(readiness, metrics_enabled=metrics_enabled, liveness=False))
    return app
