"""The AMQP source: one durable queue bound on the services' exchanges, consumed with aio-pika.

Exchanges belong to the OpenStack services: they are probed passively and
never created (declaring one with other flags than the service's would fail
with PRECONDITION_FAILED, or worse, create an exchange nobody publishes to).
A missing exchange is probed again in the background with backoff from 1 s
to 60 s and bound when it appears. None present at all, or any missing while
``require_exchanges`` is set, fails the start with a message naming them.

Probes run on a short-lived plain connection: a passive declare of a missing
entity closes its channel, which a robust channel would then try to restore.

The consuming connection is robust (``connect_robust``): after a broker
restart it reconnects, redeclares the queue and its bindings and consumes
again. Deliveries of the old channel can no longer be acked; the broker
requeues them and the outbox's unique event_id folds the redelivery away.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aio_pika
import aio_pika.exceptions
import aiormq.exceptions
import anyio
from aio_pika.abc import AbstractRobustConnection
from aiormq.abc import DeliveredMessage
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectSendStream

from . import _metrics
from ._delivery import Delivery
from ._errors import CollectorError

log = logging.getLogger(__name__)

BACKOFF_MIN_S = 1.0
BACKOFF_MAX_S = 60.0
QUEUE_STATS_INTERVAL_S = 15.0


def redact_url(url: str) -> str:
    """The URL with its password replaced, for logs and errors."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def split_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


@dataclass(frozen=True, slots=True)
class AmqpConfig:
    url: str
    exchanges: tuple[str, ...]
    topics: tuple[str, ...]
    queue_name: str = "tally-notifications"
    queue_type: str = "classic"
    prefetch: int = 100
    require_exchanges: bool = False

    def queue_arguments(self) -> dict[str, Any] | None:
        # A classic queue is declared without the argument, so an existing queue declared by an
        # older version without it is not a mismatch.
        return {"x-queue-type": "quorum"} if self.queue_type == "quorum" else None


async def _connect(url: str) -> aio_pika.abc.AbstractConnection:
    try:
        return await aio_pika.connect(url)
    except (OSError, aio_pika.exceptions.AMQPError) as exc:
        raise CollectorError(f"cannot connect to the AMQP broker at {redact_url(url)}: {exc}") from exc


async def probe_exchanges(url: str, names: Sequence[str]) -> tuple[list[str], list[str]]:
    """Passively declare each exchange; returns (present, missing)."""
    present: list[str] = []
    missing: list[str] = []
    connection = await _connect(url)
    try:
        for name in names:
            channel = await connection.channel()
            try:
                await channel.declare_exchange(name, passive=True)
                present.append(name)
            except aio_pika.exceptions.ChannelClosed:
                missing.append(name)
            finally:
                if not channel.is_closed:
                    await channel.close()
    finally:
        await connection.close()
    return present, missing


async def queue_statistics(url: str, queue_name: str) -> tuple[int, int] | None:
    """(messages ready, consumers) from a passive declare; None when the queue is not there."""
    connection = await _connect(url)
    try:
        channel = await connection.channel()
        try:
            queue = await channel.declare_queue(queue_name, passive=True)
        except aio_pika.exceptions.ChannelClosed:
            return None
        result = queue.declaration_result
        return int(result.message_count or 0), int(result.consumer_count or 0)
    finally:
        await connection.close()


class AmqpSource:
    """Consumes the collector's queue into a memory stream; acks groups after their commit."""

    def __init__(self, config: AmqpConfig) -> None:
        self.config = config
        self.bound: list[str] = []
        self.missing: list[str] = []
        self._queue: aio_pika.abc.AbstractQueue | None = None
        self._present: list[str] | None = None

    async def ack(self, deliveries: Sequence[Delivery]) -> None:
        # One ack with multiple=True per channel acks the whole group: the group holds every
        # delivery of that channel not acked before, because deliveries are taken in order.
        last: dict[int, DeliveredMessage] = {}
        for delivery in deliveries:
            message: DeliveredMessage = delivery.handle
            last[id(message.channel)] = message
        for message in last.values():
            channel, tag = message.channel, message.delivery_tag
            if tag is None or channel.is_closed:
                # The connection this came on is gone; the broker requeued it for a redelivery.
                _metrics.ACK_FAILURES.inc()
                continue
            try:
                await channel.basic_ack(tag, multiple=True)
            except (aiormq.exceptions.AMQPError, RuntimeError) as exc:
                _metrics.ACK_FAILURES.inc()
                log.warning("collector: ack failed, the broker will redeliver error=%s", exc)

    async def _bind(self, exchange: str) -> None:
        assert self._queue is not None
        for topic in self.config.topics:
            await self._queue.bind(exchange, routing_key=topic)
        self.bound.append(exchange)
        log.info(
            "collector: bound queue=%s exchange=%s topics=%s",
            self.config.queue_name,
            exchange,
            ",".join(self.config.topics),
        )

    async def _bind_missing_later(self) -> None:
        delay = BACKOFF_MIN_S
        while self.missing:
            await anyio.sleep(delay)
            delay = min(BACKOFF_MAX_S, delay * 2)
            try:
                present, missing = await probe_exchanges(self.config.url, self.missing)
            except CollectorError as exc:
                log.warning("collector: exchange probe failed error=%s", exc)
                continue
            for name in present:
                await self._bind(name)
            self.missing = missing
            _metrics.EXCHANGES_MISSING.set(len(missing))
            if missing:
                log.info(
                    "collector: exchanges still missing names=%s retry_in_s=%.0f", ",".join(missing), delay
                )

    async def _refresh_queue_statistics(self) -> None:
        while True:
            try:
                stats = await queue_statistics(self.config.url, self.config.queue_name)
            except CollectorError as exc:
                log.warning("collector: queue statistics unavailable error=%s", exc)
                stats = None
            if stats is not None:
                _metrics.QUEUE_MESSAGES.set(stats[0])
                _metrics.QUEUE_CONSUMERS.set(stats[1])
            await anyio.sleep(QUEUE_STATS_INTERVAL_S)

    async def preflight(self) -> None:
        """Probe the exchanges; raise ``CollectorError`` naming them when the collector cannot start."""
        config = self.config
        present, missing = await probe_exchanges(config.url, config.exchanges)
        if not present:
            raise CollectorError(
                f"none of the exchanges {', '.join(config.exchanges)} exist on {redact_url(config.url)}; "
                "the collector never creates them (is notification sending enabled in the services?)"
            )
        if missing and config.require_exchanges:
            raise CollectorError(
                f"exchanges {', '.join(missing)} do not exist on {redact_url(config.url)} "
                "and TALLY_OSC_REQUIRE_EXCHANGES=true"
            )
        self._present = present
        self.missing = missing
        _metrics.EXCHANGES_MISSING.set(len(missing))
        if missing:
            log.warning(
                "collector: exchanges missing, retrying in the background names=%s", ",".join(missing)
            )

    async def serve(
        self,
        deliveries: MemoryObjectSendStream[Delivery],
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Declare, bind and consume until cancelled; ``started()`` once consuming.

        Runs ``preflight`` first unless the caller already did.
        """
        config = self.config
        if self._present is None:
            await self.preflight()
        present = self._present or []
        try:
            connection: AbstractRobustConnection = await aio_pika.connect_robust(
                config.url,
                client_properties={
                    "connection_name": f"tally-collector {config.queue_name} pid={os.getpid()}"
                },
            )
        except (OSError, aio_pika.exceptions.AMQPError) as exc:
            raise CollectorError(
                f"cannot connect to the AMQP broker at {redact_url(config.url)}: {exc}"
            ) from exc
        try:
            channel = await connection.channel()
            await channel.set_qos(prefetch_count=config.prefetch)
            self._queue = await channel.declare_queue(
                config.queue_name, durable=True, arguments=config.queue_arguments()
            )
            for name in present:
                await self._bind(name)

            async def on_message(message: DeliveredMessage) -> None:
                delivery = Delivery(message.body, message.exchange or "", message.routing_key or "", message)
                try:
                    # The stream holds more than the prefetch window, so this never waits and the
                    # deliveries keep the broker's order (which the multiple-ack relies on).
                    deliveries.send_nowait(delivery)
                except anyio.WouldBlock:
                    await deliveries.send(delivery)

            async def consume(*_reopened: object) -> None:
                # Consuming on the underlying aiormq channel skips aio-pika's per-message object
                # (a third of a bare aio-pika consumer's CPU). The robust channel restores qos, the
                # queue and its bindings after a reconnect, then calls this again for the consumer.
                underlay = await channel.get_underlay_channel()
                await underlay.basic_consume(config.queue_name, on_message, no_ack=False)

            channel.reopen_callbacks.add(consume)
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._bind_missing_later)
                tg.start_soon(self._refresh_queue_statistics)
                await consume()
                log.info(
                    "collector: consuming queue=%s type=%s prefetch=%d exchanges=%s",
                    config.queue_name,
                    config.queue_type,
                    config.prefetch,
                    ",".join(self.bound),
                )
                task_status.started()
        finally:
            with anyio.CancelScope(shield=True):
                await connection.close()
