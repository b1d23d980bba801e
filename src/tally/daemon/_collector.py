"""The collector actor of ``tally run``: oslo notifications from RabbitMQ into this daemon's record.

Present when ``TALLY_OSC_AMQP_URL`` is set. Its sink is this daemon's own ingest pipeline (the same
one the Reporting API writes through) unless ``TALLY_OSC_REPORTING_URL`` names a Reporting API to
post to. On stop it takes no more deliveries (unacked ones go back to the queue) and gives its sender
what is left of the grace to deliver what the outbox committed; what is still there waits in the
outbox for the next start.

Its readiness check ``collector`` fails while the collector cannot consume from the broker, with
the reason (the broker unreachable, a refused login or vhost), and once rows waited
``TALLY_OSC_UNHEALTHY_THRESHOLD_S`` without an accepted batch; its check ``outbox`` fails while the
outbox cannot commit a write (a full disk, a read-only file), naming the cause and the path: the last
write's outcome when younger than 5 s, else a one-page write probe.
A fault of the outbox never crashes the actor: consuming waits and resumes by itself.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio

from tally.actors import ActorContext, ChildSpec
from tally.config import Settings
from tally.http import CheckResult, Readiness
from tally.ingest import IngestPipeline

if TYPE_CHECKING:
    from tally.collector import Collector
    from tally.outbox import EventSink


def http_sink_problem(settings: Settings) -> str | None:
    """Why the HTTP sink the settings name cannot be used, or None; checked before anything starts."""
    if not settings.osc_reporting_url:
        return None
    from tally.outbox import HttpSink, SinkConfigError

    try:
        HttpSink(settings.osc_reporting_url, None, insecure=settings.osc_reporting_insecure)
    except SinkConfigError as exc:
        return str(exc)
    return None


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


@asynccontextmanager
async def _open_sink(settings: Settings, pipeline: Callable[[], IngestPipeline]) -> AsyncIterator[EventSink]:
    from tally.outbox import HttpSink, IngestSink

    if not settings.osc_reporting_url:
        yield IngestSink(pipeline())
        return
    token = settings.osc_token.get_secret_value() if settings.osc_token is not None else None
    sink = HttpSink(settings.osc_reporting_url, token, insecure=settings.osc_reporting_insecure)
    try:
        yield sink
    finally:
        await sink.aclose()


def collector_child(
    settings: Settings, readiness: Readiness, pipeline: Callable[[], IngestPipeline]
) -> ChildSpec:
    """The ``collector`` child; ``pipeline`` gives the in-process sink's pipeline once the store is open."""
    from tally.collector import Collector

    running: list[Collector] = []

    async def run(ctx: ActorContext) -> None:
        try:
            async with _open_sink(settings, pipeline) as sink, anyio.create_task_group() as tg:
                collector = Collector(settings, sink=sink)
                # Seen by the checks while it starts too: an outbox it cannot open yet says why.
                running[:] = [collector]
                try:
                    await tg.start(collector.serve)
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

    async def healthy() -> CheckResult:
        if not running:
            return CheckResult(False, "the collector is not running")
        health = running[0].health()
        problem = running[0].broker_problem()
        if problem is not None:
            # Not ready while it cannot consume; the outbox still delivers what it holds.
            return CheckResult(False, problem)
        detail = health.detail or f"outbox_depth={health.depth}"
        return CheckResult(health.healthy, detail)

    async def outbox_writes() -> CheckResult:
        if not running:
            return CheckResult(False, "the collector is not running")
        problem = await running[0].outbox_problem()
        return CheckResult(problem is None, problem or "writes commit")

    readiness.register("collector", healthy)
    readiness.register("outbox", outbox_writes)
    return ChildSpec("collector", run)
