"""The collector as a service: sources, consumer loops, outbox and sender in one task group.

``Collector`` is built by the composition root (``tally.app``) for ``tally run``'s
collector actor, the standalone command (which also serves ``/healthz``) and the
simulator; ``serve`` runs it, ``stop`` and the statistics are what they ask of it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

import anyio
from anyio.abc import TaskStatus

from tally.config import Settings
from tally.outbox import EventSink, Outbox, OutboxWriteError, Sender, open_outbox

from ._amqp import AmqpConfig, AmqpSource, split_list
from ._bus import InProcessBus
from ._consumer import Consumer
from ._delivery import Delivery
from ._errors import CollectorError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Health:
    """healthy: False once rows waited ``threshold_s`` without an accepted batch."""

    healthy: bool
    depth: int
    oldest_age_s: float
    seconds_since_accepted: float | None
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {
            "status": "ok" if self.healthy else "unhealthy",
            "outbox_depth": self.depth,
            "oldest_age_s": round(self.oldest_age_s, 3),
            "seconds_since_accepted_batch": (
                None if self.seconds_since_accepted is None else round(self.seconds_since_accepted, 3)
            ),
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class CollectorStatistics:
    """taken: deliveries taken from all sources; acked: those committed and acked; in_hand: the rest."""

    taken: int
    acked: int
    in_hand: int
    outbox_depth: int


def amqp_config(settings: Settings) -> AmqpConfig | None:
    if settings.osc_amqp_url is None:
        return None
    return AmqpConfig(
        url=settings.osc_amqp_url.get_secret_value(),
        exchanges=tuple(split_list(settings.osc_exchanges)),
        topics=tuple(split_list(settings.osc_topics)),
        queue_name=settings.osc_queue_name,
        queue_type=settings.osc_queue_type,
        prefetch=settings.osc_prefetch,
        require_exchanges=settings.osc_require_exchanges,
        durable_exchanges=settings.osc_durable_exchanges,
        broker_definitions=settings.osc_broker_definitions,
    )


class Collector:
    def __init__(self, settings: Settings, *, sink: EventSink, bus: InProcessBus | None = None) -> None:
        self.settings = settings
        self.sink = sink
        self.bus = bus
        self.amqp = amqp_config(settings)
        if self.amqp is None and bus is None:
            raise CollectorError(
                "the collector has no source: set TALLY_OSC_AMQP_URL or give it the in-process bus"
            )
        if self.amqp is not None and not self.amqp.exchanges:
            raise CollectorError("TALLY_OSC_EXCHANGES names no exchange")
        if self.amqp is not None and not self.amqp.topics:
            raise CollectorError("TALLY_OSC_TOPICS names no topic")
        self.outbox: Outbox | None = None
        self.sender: Sender | None = None
        self._consumers: list[Consumer] = []
        self._started_at = time.time()
        self._source: AmqpSource | None = None
        self._consuming: anyio.CancelScope | None = None
        # Why the outbox could not be opened, while the collector tries again (a full disk at start).
        self._open_problem: str | None = None

    def statistics(self) -> CollectorStatistics:
        return CollectorStatistics(
            taken=sum(c.taken for c in self._consumers),
            acked=sum(c.acked for c in self._consumers),
            in_hand=sum(c.in_hand for c in self._consumers),
            outbox_depth=self.outbox.depth if self.outbox is not None else 0,
        )

    def broker_problem(self) -> str | None:
        """Why the collector does not consume from the broker now (the reason its log gives), or
        None while it does (and always with the in-process bus alone)."""
        if self._source is None:
            return None if self.amqp is None else "starting"
        return self._source.problem

    async def outbox_problem(self) -> str | None:
        """Why the outbox cannot write ("the outbox cannot write: disk full on PATH ..."), or None
        while it can (``Outbox.check_writable``); consuming waits for it meanwhile."""
        if self.outbox is None:
            return self._open_problem
        problem = await self.outbox.check_writable()
        return None if problem is None else problem.detail

    def health(self) -> Health:
        threshold = self.settings.osc_unhealthy_threshold_s
        if self.outbox is None or self.sender is None:
            return Health(False, 0, 0.0, None, "starting")
        now = time.time()
        stats = self.outbox.statistics()
        last = self.sender.statistics().last_accepted_at
        since = None if last is None else now - last
        oldest_age = 0.0 if stats.oldest_enqueued_at is None else now - stats.oldest_enqueued_at
        quiet_for = now - (last if last is not None else self._started_at)
        if stats.depth and quiet_for > threshold:
            return Health(
                False,
                stats.depth,
                oldest_age,
                since,
                f"rows wait and no batch was accepted for {quiet_for:.0f} s",
            )
        return Health(True, stats.depth, oldest_age, since, "")

    async def _serve_sources(
        self, outbox: Outbox, *, task_status: TaskStatus[anyio.CancelScope] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        settings = self.settings
        async with anyio.create_task_group() as tg:
            if self.bus is not None:
                consumer = Consumer(
                    outbox, cloud=settings.osc_cloud, buffer_max=settings.osc_buffer_max_events
                )
                if self.sender is not None:
                    self.bus.set_drainer(self.sender.flush_until_empty)
                self._consumers.append(consumer)
                tg.start_soon(consumer.consume, self.bus.receiver(), self.bus)
            if self._source is not None and self.amqp is not None:
                send, receive = anyio.create_memory_object_stream[Delivery](self.amqp.prefetch * 2 + 16)
                consumer = Consumer(
                    outbox,
                    cloud=settings.osc_cloud,
                    buffer_max=settings.osc_buffer_max_events,
                    # Half the prefetch window: while one group commits, the broker keeps the other
                    # half flowing, instead of waiting for the ack of a whole window.
                    batch_limit=max(self.amqp.prefetch // 2, 1),
                )
                self._consumers.append(consumer)
                tg.start_soon(consumer.consume, receive, self._source)
                await tg.start(self._source.serve, send)
            self._consuming = tg.cancel_scope
            task_status.started(tg.cancel_scope)
            await anyio.sleep_forever()

    def stop_consuming(self) -> None:
        """Take no more deliveries (unacked ones go back to the queue); the sender keeps running."""
        if self._consuming is not None:
            self._consuming.cancel()

    async def stop(self, grace_s: float) -> None:
        """The SIGTERM path: stop taking, then give the sender ``grace_s`` to deliver what is committed."""
        self.stop_consuming()
        if self.sender is not None and self.outbox is not None and self.outbox.depth:
            with anyio.move_on_after(grace_s):
                await self.sender.flush_until_empty()
        log.info("collector: stopped outbox_depth=%d", self.outbox.depth if self.outbox else 0)

    async def drain(self) -> None:
        """Deliver everything committed so far (and, with the bus, everything published so far)."""
        if self.bus is not None:
            await self.bus.wait_consumed()
        if self.sender is not None:
            await self.sender.flush_until_empty()

    @asynccontextmanager
    async def _open_outbox(self) -> AsyncIterator[Outbox]:
        """The outbox, opened as soon as it can be: a file the disk cannot take (full at start, so
        SQLite cannot make the WAL's files) is tried again every 0.25 to 5 s, its reason on
        ``outbox_problem``, rather than crashing the collector into a restart loop."""
        path, delay = self.settings.outbox_path, 0.25
        while True:
            opened = False
            try:
                async with open_outbox(path) as outbox:
                    opened = True
                    if self._open_problem is not None:
                        log.warning("collector: the outbox opens again path=%s", path)
                        self._open_problem = None
                    yield outbox
                    return
            except OutboxWriteError as exc:
                if opened:
                    raise
                if self._open_problem is None:
                    log.warning("collector: %s; the collector starts once it opens", exc.detail)
                self._open_problem = exc.detail
            await anyio.sleep(delay)
            delay = min(5.0, delay * 2)

    async def serve(self, *, task_status: TaskStatus[Collector] = anyio.TASK_STATUS_IGNORED) -> NoReturn:
        settings = self.settings
        # Before anything else runs, so a bad URL is one plain error, not a task group's.
        self._source = AmqpSource(self.amqp) if self.amqp is not None else None
        async with self._open_outbox() as outbox, anyio.create_task_group() as tg:
            self.outbox = outbox
            self.sender = Sender(
                outbox,
                self.sink,
                batch_max=settings.osc_batch_max,
                flush_interval_s=settings.osc_flush_interval_s,
            )
            log.info("collector: outbox open path=%s depth=%d", settings.outbox_path, outbox.depth)
            await tg.start(self.sender.serve)
            # Sources and consumers live in a scope of their own, so a graceful stop can end the
            # taking while the sender goes on delivering what was committed.
            await tg.start(self._serve_sources, outbox)
            task_status.started(self)
            await anyio.sleep_forever()
        raise AssertionError("unreachable")
