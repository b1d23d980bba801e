"""The AMQP source: one durable queue bound on the services' exchanges, declared as oslo does.

On every connect, before consuming, the source declares each service exchange itself, a topic
exchange with the durability the cloud uses (``TALLY_OSC_DURABLE_EXCHANGES``, oslo's
``amqp_durable_queues``, false by default as in OpenStack), declares its queue and binds it on
every topic. That is what oslo's own notification listener does, and it is what keeps a broker
restart from losing notifications: a restart deletes non-durable exchanges and every binding on
them, and the services flush the backlog they held during the outage as soon as they are back, so
the binding must exist before they publish. Hence also the reconnect schedule: the first attempt
within 0.25 s, then a jittered wait of 0.125 to 0.25 s for as long as the broker cannot be reached
(a closed port costs nobody anything, and the first publisher back wins whatever it sends before
our binding), growing to 60 s only while it refuses us (a login or permission the broker turns
down does not change in a second).

That race cannot be won every time: a service whose own retry lands in the instant between the
node opening its port and the collector's binding publishes into an exchange with no binding of
ours, and the broker drops it. So after an outage in which the node may have been down (its port
closed or silent, or it said it was shutting down), the collector first looks for its canary, a
non-durable exchange of its own (``AmqpConfig.canary_exchange``): still there, the node did not
restart (a network drop, a frozen node) and nothing was lost. Gone, it checks each non-durable
exchange: one that is already there was declared again by a service before us, and is counted in
``tally_collector_rebind_races_total`` with a warning, the record of a possible loss that the next
sync repairs. Durable exchanges, or the broker's definitions loaded at boot (``tally collector
definitions``, then ``TALLY_OSC_BROKER_DEFINITIONS=true``), leave no such window and no check.

The consuming connection is the lean client of ``_wire``, which also serves the start's checks
and the queue statistics: one AMQP stack. When a connection ends (a restart, a dropped
connection, missing heartbeats, a consumer the broker cancelled, a frozen broker that stopped
answering) the source connects again, to the next member of the cluster first, and goes on;
deliveries of the old connection can no longer be acked, the broker requeues them and the
outbox's unique event_id folds the redelivery away. Nothing at runtime ends the source:
``CollectorError`` comes only from the start, for a configuration the broker refuses.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectSendStream

from . import _metrics
from ._decode import MAX_BODY_BYTES
from ._delivery import Delivery
from ._errors import CollectorError
from ._frames import AmqpClosed, AmqpUnreachable, Delivered
from ._url import AmqpAddress, AmqpUrlInvalid
from ._url import redact_url as redact_url
from ._wire import REFUSALS, ConsumerConnection, run_consumer

log = logging.getLogger(__name__)

FIRST_RETRY_S = 0.25
UNREACHABLE_MAX_S = 0.25
REFUSED_MAX_S = 60.0
QUEUE_STATS_INTERVAL_S = 15.0
REPEAT_LOG_S = 60.0
# The broker's reply code when it closes connections because the node is shutting down.
CONNECTION_FORCED = 320


def split_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def reconnect_delay(attempt: int, *, refused: bool, rng: random.Random) -> float:
    """Seconds to wait before connection attempt ``attempt`` (0 is the first after a loss).

    The first is within ``FIRST_RETRY_S``; then the bound doubles from there up to
    ``UNREACHABLE_MAX_S`` (or ``REFUSED_MAX_S`` while the broker refuses), and the wait is drawn
    from the upper half of the bound, so that collectors that lost the broker together do not
    come back in step.
    """
    if attempt <= 0:
        return rng.uniform(0.0, FIRST_RETRY_S)
    ceiling = REFUSED_MAX_S if refused else UNREACHABLE_MAX_S
    bound = min(ceiling, FIRST_RETRY_S * 2.0 ** min(attempt, 16))
    return rng.uniform(bound / 2, bound)


def is_refusal(error: AmqpClosed) -> bool:
    return error.reply_code in REFUSALS


@dataclass(frozen=True, slots=True)
class AmqpConfig:
    url: str
    exchanges: tuple[str, ...]
    topics: tuple[str, ...]
    queue_name: str = "tally-notifications"
    queue_type: str = "classic"
    prefetch: int = 100
    require_exchanges: bool = False
    durable_exchanges: bool = False
    broker_definitions: bool = False
    max_body: int = MAX_BODY_BYTES

    @property
    def bindings_survive_restarts(self) -> bool:
        """Whether a restarted node has the bindings before any service can publish."""
        return self.durable_exchanges or self.broker_definitions

    @property
    def canary_exchange(self) -> str:
        """A non-durable exchange of the collector's own, declared on every connect: a restart deletes
        it as it deletes the services' exchanges, and nobody else declares it, so finding it after an
        outage says the node did not restart (a network drop, a frozen node) and no race happened.
        Named after the queue, so the permission that lets the collector declare its queue covers it."""
        return f"{self.queue_name}.canary"

    def queue_arguments(self) -> dict[str, Any] | None:
        # A classic queue is declared without the argument, so an existing queue declared by an
        # older version without it is not a mismatch.
        return {"x-queue-type": "quorum"} if self.queue_type == "quorum" else None

    def address(self) -> AmqpAddress:
        """The parsed URL; ``CollectorError`` naming what is wrong with it."""
        try:
            address = AmqpAddress.parse(self.url)
            address.check_files()
        except AmqpUrlInvalid as exc:
            raise CollectorError(f"TALLY_OSC_AMQP_URL {redact_url(self.url)}: {exc}") from None
        return address


class AmqpSource:
    """Consumes the collector's queue into a memory stream; acks groups after their commit."""

    def __init__(self, config: AmqpConfig) -> None:
        self.config = config
        self.address = config.address()
        self.bound: list[str] = []
        # Why the source is not consuming now, for the log and /readyz; None while it consumes.
        self.problem: str | None = "not connected yet"
        self._connection: ConsumerConnection | None = None
        self._consuming = anyio.Event()
        self._rng = random.Random()

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

    async def _check_exchanges(self, connection: ConsumerConnection) -> None:
        """With ``require_exchanges``: every configured exchange must exist before the collector
        declares any (the services create them on their first notification)."""
        missing = [name for name in self.config.exchanges if not await connection.exchange_exists(name)]
        if missing:
            raise CollectorError(
                f"exchanges {', '.join(missing)} do not exist on {redact_url(self.config.url)} "
                "and TALLY_OSC_REQUIRE_EXCHANGES=true (is notification sending enabled in the services?)"
            )

    async def _refresh_queue_statistics(self) -> None:
        """Every ``QUEUE_STATS_INTERVAL_S`` while consuming, and at once when consuming (re)starts."""
        while True:
            await self._consuming.wait()
            connection = self._connection
            if connection is not None and not connection.closed:
                try:
                    ready, consumers = await connection.declare_queue(
                        self.config.queue_name, self.config.queue_arguments(), passive=True
                    )
                except AmqpClosed:
                    pass  # the connection ended; the reconnect logs why
                else:
                    _metrics.QUEUE_MESSAGES.set(ready)
                    _metrics.QUEUE_CONSUMERS.set(consumers)
            await anyio.sleep(QUEUE_STATS_INTERVAL_S)

    async def serve(
        self,
        deliveries: MemoryObjectSendStream[Delivery],
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Declare, bind and consume until cancelled, connecting again whenever the connection ends.

        ``started()`` once consuming, or once the first attempt found the broker unreachable (the
        source then keeps trying, with the reason in ``problem``). A first attempt the broker
        refuses (login, vhost, permissions, an exchange of other durability, a missing exchange
        while required) raises ``CollectorError``: that is a configuration to fix, not an outage.
        """
        serving = _Serving(self, deliveries, task_status)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._refresh_queue_statistics)
            while True:
                ended = await serving.connect()
                await anyio.sleep(serving.after(ended))


class _Serving:
    """One ``serve``: the state its connections share, and the steps of each (set up, hand over, end)."""

    def __init__(
        self, source: AmqpSource, deliveries: MemoryObjectSendStream[Delivery], task_status: TaskStatus[None]
    ) -> None:
        self.source = source
        self.config = source.config
        self.deliveries = deliveries
        self.task_status = task_status
        self.name = f"tally-collector {self.config.queue_name} pid={os.getpid()}"
        self.consuming = False
        self.started = False
        self.connection: ConsumerConnection | None = None
        self.startup_error: CollectorError | None = None
        # The node was down (port closed, or it announced its shutdown): its non-durable exchanges
        # are gone, and one found on reconnecting was declared again by a service before us.
        self.node_was_down = False
        self.attempt = 0
        self.host = 0
        self.said_at = -REPEAT_LOG_S

    async def connect(self) -> AmqpClosed:
        """One connection, from its attempt to its end: how it ended."""
        self.consuming = False
        ended, self.host = await run_consumer(
            self.source.address,
            connection_name=self.name,
            on_delivery=self.hand_over,
            on_ready=self.set_up,
            max_body=self.config.max_body,
            first_host=self.host,
        )
        return ended

    async def hand_over(self, message: Delivered) -> None:
        handle = (self.connection, message.delivery_tag)
        refused = (
            None
            if message.refused_size is None
            else f"body of {message.refused_size} bytes is over {self.config.max_body}"
        )
        delivery = Delivery(message.body, message.exchange, message.routing_key, handle, refused)
        try:
            # The stream holds more than the prefetch window, so this never waits and the
            # deliveries keep the broker's order (which the multiple-ack relies on).
            self.deliveries.send_nowait(delivery)
        except anyio.WouldBlock:
            await self.deliveries.send(delivery)

    async def set_up(self, opened: ConsumerConnection) -> None:
        config = self.config
        # Before consume: deliveries can come in the same read as its reply, ahead of the lines
        # below, and each names the connection its ack goes to.
        self.connection = opened
        if config.require_exchanges and not self.started:
            try:
                await self.source._check_exchanges(opened)
            except CollectorError as exc:
                self.startup_error = exc
                raise AmqpClosed(str(exc), 404) from None
        raced = await self._raced(opened)
        await opened.qos(config.prefetch)
        for exchange in config.exchanges:
            await opened.declare_exchange(exchange, durable=config.durable_exchanges)
        if not config.bindings_survive_restarts:
            await opened.declare_exchange(config.canary_exchange, durable=False)
        await opened.declare_queue(config.queue_name, config.queue_arguments())
        for exchange in config.exchanges:
            for topic in config.topics:
                await opened.bind(config.queue_name, exchange, topic)
        self.source.bound = list(config.exchanges)
        await opened.consume(config.queue_name, f"tally-collector-{os.getpid()}")
        self._now_consuming(opened, raced)

    async def _raced(self, opened: ConsumerConnection) -> list[str]:
        """The services' exchanges declared again by a service before us, after a node restart."""
        config = self.config
        if not self.node_was_down or config.bindings_survive_restarts:
            return []
        # Before qos: a probe of a missing exchange costs the channel, opened again bare.
        if await opened.exchange_exists(config.canary_exchange):
            log.info("collector: the broker kept its exchanges through the outage (no restart)")
            return []
        return [name for name in config.exchanges if await opened.exchange_exists(name)]

    def _now_consuming(self, opened: ConsumerConnection, raced: list[str]) -> None:
        config = self.config
        self.source._connection = opened
        self.source._consuming.set()
        self.source.problem = None
        self.consuming = True
        _metrics.CONNECTED.set(1)
        for exchange in raced:
            _metrics.REBIND_RACES.labels(exchange).inc()
        if raced:
            log.warning(
                "collector: after the broker restart a service declared %s again before the "
                "collector bound its queue: what it published in between reached no queue of "
                "Tally's; the next sync books what it missed (durable exchanges or broker "
                "definitions close this window, docs/collector.md)",
                ",".join(raced),
            )
        log.info(
            "collector: consuming queue=%s type=%s prefetch=%d broker=%s exchanges=%s durable=%s",
            config.queue_name,
            config.queue_type,
            config.prefetch,
            opened.where,
            ",".join(self.source.bound),
            str(config.durable_exchanges).lower(),
        )
        if not self.started:
            self.started = True
            self.task_status.started()

    def after(self, ended: AmqpClosed) -> float:
        """What a connection's end leaves: the state for the next, and the seconds to wait for it."""
        source = self.source
        source._connection = None
        if isinstance(ended, AmqpUnreachable) or ended.reply_code == CONNECTION_FORCED:
            self.node_was_down = True
        elif self.consuming:
            self.node_was_down = False
        if source._consuming.is_set():
            source._consuming = anyio.Event()
        _metrics.CONNECTED.set(0)
        # A refusal counts only while setting up: once consuming, whatever closes the channel
        # (an ack the broker did not expect, say) is an outage like any other.
        refused = is_refusal(ended) and not self.consuming
        if not self.started:
            if self.startup_error is not None:
                raise self.startup_error
            if refused:
                raise CollectorError(_refusal_message(self.config, ended))
            self.started = True
            self.task_status.started()
        if self.consuming:
            _metrics.CONNECTIONS_LOST.inc()
            self.attempt = 0
            # The member that failed goes last: the next attempt starts at the next one.
            self.host = (self.host + 1) % len(source.address.hosts)
        problem = _refusal_message(self.config, ended) if refused else f"broker unavailable: {ended}"
        delay = reconnect_delay(self.attempt, refused=refused, rng=source._rng)
        self.attempt += 1
        # Said when it changes and then once a minute: an outage is one line a minute, not
        # one per attempt.
        now = anyio.current_time()
        if problem != source.problem or now - self.said_at >= REPEAT_LOG_S:
            log.warning(
                "collector: not consuming (attempt %d), connecting again in %.2f s: %s",
                self.attempt,
                delay,
                problem,
            )
            self.said_at = now
        source.problem = problem
        return delay


def _refusal_message(config: AmqpConfig, error: AmqpClosed) -> str:
    """The broker's refusal with the setting to look at."""
    where = redact_url(config.url)
    if error.reply_code == 406:
        return (
            f"the broker at {where} refused a declaration ({error}); an exchange of the services exists "
            "with another durability: set TALLY_OSC_DURABLE_EXCHANGES to the cloud's amqp_durable_queues, "
            "or the queue exists with another TALLY_OSC_QUEUE_TYPE"
        )
    if error.reply_code == 530:
        return f"the broker at {where} refused the vhost ({error}); does it exist, may the user use it?"
    return f"the broker at {where} refused the collector ({error}); check the user, password and permissions"


async def queue_statistics(url: str, queue_name: str) -> tuple[int, int] | None:
    """(messages ready, consumers) of a queue, from a passive declare on a connection of its own;
    None when the queue is not there. ``CollectorError`` when the broker cannot be asked."""
    try:
        address = AmqpAddress.parse(url)
    except AmqpUrlInvalid as exc:
        raise CollectorError(f"{redact_url(url)}: {exc}") from None
    found: list[tuple[int, int]] = []

    async def ask(connection: ConsumerConnection) -> None:
        found.append(await connection.declare_queue(queue_name, None, passive=True))
        raise AmqpClosed("answered")

    async def unused(_: Delivered) -> None:
        raise AssertionError("no consumer on this connection")

    ended, _host = await run_consumer(
        address, connection_name="tally queue statistics", on_delivery=unused, on_ready=ask, max_body=0
    )
    if found:
        return found[0]
    if ended.reply_code == 404:
        return None
    raise CollectorError(f"cannot read the queue {queue_name} on {redact_url(url)}: {ended}")
