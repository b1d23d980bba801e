"""The AMQP source: one durable queue bound on the services' exchanges, consumed with aio-pika.

Exchanges belong to the OpenStack services: they are probed passively and
never created (declaring one with other flags than the service's would fail
with PRECONDITION_FAILED, or worse, create an exchange nobody publishes to).
A missing exchange is probed again in the background with backoff from 1 s
to 60 s and bound when it appears. None present at all, or any missing while
``require_exchanges`` is set, fails the start with a message naming them.

Probes and queue statistics run on short-lived aio-pika connections. The
consuming connection is the lean consumer of ``_wire``: when it ends (a broker
restart, a dropped connection, missed heartbeats) the source connects again
with backoff from 1 s to 60 s, declares the queue, binds the exchanges that are
there and consumes again. Deliveries of the old connection can no longer be
acked; the broker requeues them and the outbox's unique event_id folds the
redelivery away.
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
import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectSendStream

from . import _metrics
from ._delivery import Delivery
from ._errors import CollectorError
from ._wire import AmqpAddress, AmqpClosed, AmqpUrlInvalid, ConsumerConnection, Delivered, run_consumer

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
        self._connection: ConsumerConnection | None = None
        self._present: list[str] | None = None
        self._missing_changed = anyio.Event()

    async def ack(self, deliveries: Sequence[Delivery]) -> None:
        # One ack with multiple=True per connection acks the whole group: the group holds every
        # delivery of that connection not acked before, because deliveries are taken in order.
        last: dict[int, tuple[ConsumerConnection, int]] = {}
        for delivery in deliveries:
            connection, tag = delivery.handle
            last[id(connection)] = (connection, tag)
        for connection, tag in last.values():
            if connection.closed:
                # The connection this came on is gone; the broker requeued it for a redelivery.
                _metrics.ACK_FAILURES.inc()
                continue
            try:
                await connection.ack(tag)
            except AmqpClosed as exc:
                _metrics.ACK_FAILURES.inc()
                log.warning("collector: ack failed, the broker will redeliver error=%s", exc)

    async def _bind(self, connection: ConsumerConnection, exchange: str) -> None:
        for topic in self.config.topics:
            await connection.bind(self.config.queue_name, exchange, topic)
        if exchange not in self.bound:
            self.bound.append(exchange)
        log.info(
            "collector: bound queue=%s exchange=%s topics=%s",
            self.config.queue_name,
            exchange,
            ",".join(self.config.topics),
        )

    def _set_missing(self, missing: list[str]) -> None:
        self.missing = missing
        _metrics.EXCHANGES_MISSING.set(len(missing))
        self._missing_changed.set()
        self._missing_changed = anyio.Event()

    async def _bind_missing_later(self) -> None:
        """Probe the missing exchanges with backoff from 1 s to 60 s; bind each on the live connection
        as it appears. Runs for the source's life: a reconnect may find an exchange gone."""
        while True:
            if not self.missing:
                await self._missing_changed.wait()
                continue
            delay = BACKOFF_MIN_S
            while self.missing:
                await anyio.sleep(delay)
                delay = min(BACKOFF_MAX_S, delay * 2)
                connection = self._connection
                if connection is None or connection.closed:
                    continue
                try:
                    present, missing = await probe_exchanges(self.config.url, self.missing)
                    for name in present:
                        await self._bind(connection, name)
                except CollectorError as exc:
                    log.warning("collector: exchange probe failed error=%s", exc)
                    continue
                except AmqpClosed:
                    continue  # the connection ended; the reconnect binds what is there
                self._set_missing(missing)
                if missing:
                    log.info(
                        "collector: exchanges still missing names=%s retry_in_s=%.0f",
                        ",".join(missing),
                        delay,
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
        try:
            AmqpAddress.parse(config.url)
        except AmqpUrlInvalid as exc:
            raise CollectorError(f"TALLY_OSC_AMQP_URL {redact_url(config.url)}: {exc}") from None
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
        self._set_missing(missing)
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
        """Declare, bind and consume until cancelled, connecting again whenever the connection ends;
        ``started()`` once consuming. A first connection that fails raises ``CollectorError``.

        Runs ``preflight`` first unless the caller already did.
        """
        config = self.config
        if self._present is None:
            await self.preflight()
        address = AmqpAddress.parse(config.url)
        name = f"tally-collector {config.queue_name} pid={os.getpid()}"
        started = False
        connection: ConsumerConnection | None = None
        delay = BACKOFF_MIN_S

        async def hand_over(message: Delivered) -> None:
            handle = (connection, message.delivery_tag)
            delivery = Delivery(message.body, message.exchange, message.routing_key, handle)
            try:
                # The stream holds more than the prefetch window, so this never waits and the
                # deliveries keep the broker's order (which the multiple-ack relies on).
                deliveries.send_nowait(delivery)
            except anyio.WouldBlock:
                await deliveries.send(delivery)

        async def set_up(opened: ConsumerConnection) -> None:
            nonlocal connection, started, delay
            # Before consume: deliveries can come in the same read as its reply, ahead of the lines
            # below, and each names the connection its ack goes to.
            connection = opened
            await opened.qos(config.prefetch)
            await opened.declare_queue(config.queue_name, config.queue_arguments())
            if started:
                # A reconnect: bind what is there now; anything gone joins the missing.
                try:
                    present, missing = await probe_exchanges(config.url, [*self.bound, *self.missing])
                except CollectorError as exc:
                    raise AmqpClosed(str(exc)) from None
                self._set_missing(missing)
            else:
                present = self._present or []
            for exchange in present:
                await self._bind(opened, exchange)
            await opened.consume(config.queue_name, f"tally-collector-{os.getpid()}")
            self._connection = opened
            delay = BACKOFF_MIN_S
            log.info(
                "collector: consuming queue=%s type=%s prefetch=%d exchanges=%s",
                config.queue_name,
                config.queue_type,
                config.prefetch,
                ",".join(self.bound),
            )
            if not started:
                started = True
                tg.start_soon(self._bind_missing_later)
                tg.start_soon(self._refresh_queue_statistics)
                task_status.started()

        async with anyio.create_task_group() as tg:
            while True:
                ended = await run_consumer(
                    address, connection_name=name, on_delivery=hand_over, on_ready=set_up
                )
                self._connection = None
                if not started:
                    break
                _metrics.CONNECTIONS_LOST.inc()
                log.warning("collector: connection ended, connecting again in %.0f s error=%s", delay, ended)
                await anyio.sleep(delay)
                delay = min(BACKOFF_MAX_S, delay * 2)
        # Raised here, outside the task group, so that the caller sees the error itself.
        raise CollectorError(f"cannot consume from the AMQP broker at {redact_url(config.url)}: {ended}")
