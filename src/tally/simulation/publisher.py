"""The publisher: a month's notifications onto a bus, paced by the virtual clock, with the held-back share.

Two sinks take the oslo v2 envelopes: the collector's :class:`~tally.collector.InProcessBus` and
RabbitMQ (aio-pika, publisher confirms). On RabbitMQ the simulator plays the cloud, so it declares
the topic exchanges the services would have (non-durable, as oslo.messaging's default), and it
refuses a broker that is not on loopback unless told otherwise: a simulated month published into a
production broker would be billed.

Pacing: at a factor above 0 each notification waits until the clock reaches its ``published_at``;
at 0 everything goes as fast as the sink takes it, and :meth:`Publisher.publish_until` lets a caller
step the month (the lockstep of ``tally simulate``). Progress goes into the shared
:class:`PublishProgress` that ``GET /clock`` shows; ``POST /release`` (added with
:func:`add_release_route`) sends the held-back share once the rest is out.
"""

from __future__ import annotations

import ipaddress
import logging
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol
from urllib.parse import urlsplit

import aio_pika
import anyio
import orjson
from quart import Quart, Response, request

from tally.collector import InProcessBus
from tally.core import format_instant
from tally.simulator.clock import PublishProgress, VirtualClock
from tally.simulator.notifications import EXCHANGES, Notification

from ._metrics import PUBLISHED

log = logging.getLogger(__name__)

#: How many AMQP publishes wait for their confirm at once.
CONFIRM_WINDOW = 256
#: Wall seconds the paced loop sleeps at most before looking at the clock again (a PUT /clock may
#: have changed the factor meanwhile).
MAX_NAP_S = 0.5


class PublishError(RuntimeError):
    """The sink cannot take the month; the message names the broker (never its credentials)."""


class Sink(Protocol):
    async def publish_many(self, items: Sequence[tuple[str, str, bytes]]) -> None: ...


class BusSink:
    """The in-process bus of a collector running in this process."""

    def __init__(self, bus: InProcessBus) -> None:
        self.bus = bus

    async def publish_many(self, items: Sequence[tuple[str, str, bytes]]) -> None:
        for exchange, routing_key, body in items:
            await self.bus.publish(exchange, routing_key, body)


def redact(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def is_loopback_url(url: str) -> bool:
    host = (urlsplit(url).hostname or "").strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_broker(url: str, *, allow_remote: bool) -> None:
    """Refuse a broker URL not on loopback unless ``allow_remote``; raises PublishError."""
    if not url.startswith(("amqp://", "amqps://")):
        raise PublishError(f"the broker URL must start with amqp:// or amqps://, not {redact(url)!r}")
    if not allow_remote and not is_loopback_url(url):
        raise PublishError(
            f"the broker {redact(url)} is not on loopback; a simulated month would be billed there "
            "(pass --allow-remote-broker if that is really wanted)"
        )


class AmqpSink:
    """RabbitMQ with publisher confirms; use as an async context manager."""

    def __init__(self, url: str, *, allow_remote: bool = False) -> None:
        check_broker(url, allow_remote=allow_remote)
        self.url = url
        self._connection: aio_pika.abc.AbstractConnection | None = None
        self._exchanges: dict[str, aio_pika.abc.AbstractExchange] = {}

    async def __aenter__(self) -> AmqpSink:
        try:
            self._connection = await aio_pika.connect(
                self.url, client_properties={"connection_name": "tally-simulator publisher"}
            )
            channel = await self._connection.channel(publisher_confirms=True)
            for name in sorted(set(EXCHANGES.values())):
                self._exchanges[name] = await channel.declare_exchange(
                    name, aio_pika.ExchangeType.TOPIC, durable=False
                )
        except (OSError, aio_pika.exceptions.AMQPError) as exc:
            await self.aclose()
            raise PublishError(f"cannot publish to the broker at {redact(self.url)}: {exc}") from exc
        log.info("publisher connected broker=%s exchanges=%s", redact(self.url), ",".join(self._exchanges))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._connection is not None:
            with anyio.CancelScope(shield=True):
                await self._connection.close()
            self._connection = None

    async def publish_many(self, items: Sequence[tuple[str, str, bytes]]) -> None:
        for start in range(0, len(items), CONFIRM_WINDOW):
            window = items[start : start + CONFIRM_WINDOW]
            try:
                async with anyio.create_task_group() as tg:
                    for exchange, routing_key, body in window:
                        tg.start_soon(self._publish_one, exchange, routing_key, body)
            except* aio_pika.exceptions.AMQPError as group:
                raise PublishError(
                    f"publishing to {redact(self.url)} failed: {group.exceptions[0]}"
                ) from None

    async def _publish_one(self, exchange: str, routing_key: str, body: bytes) -> None:
        message = aio_pika.Message(body, content_type="application/json", content_encoding="utf-8")
        await self._exchanges[exchange].publish(message, routing_key=routing_key)


class ReleaseRefused(Exception):
    """POST /release cannot release now; the message says which of the three cases it is."""


class Publisher:
    """Publishes ``notifications`` in order and holds ``held_back`` until :meth:`release`."""

    def __init__(
        self,
        notifications: Sequence[Notification],
        held_back: Sequence[Notification],
        sink: Sink,
        clock: VirtualClock,
        progress: PublishProgress | None = None,
        *,
        batch: int = 500,
    ) -> None:
        self._items = notifications
        self._held = held_back
        self._sink = sink
        self._clock = clock
        self._batch = batch
        self._next = 0
        self.released = False
        self.released_event = anyio.Event()
        self.progress = progress or PublishProgress()
        self.progress.total = len(notifications) + len(held_back)
        self.progress.held = len(held_back)
        self.progress.published = 0
        self.progress.holding = False
        #: Notifications sent per exchange (a broker drops what no queue is bound to).
        self.sent_by_exchange: Counter[str] = Counter()

    @property
    def done(self) -> bool:
        return self._next >= len(self._items)

    @property
    def next_instant(self) -> datetime | None:
        return None if self.done else self._items[self._next].published_at

    async def _send(self, items: Sequence[Notification]) -> None:
        await self._sink.publish_many([(n.exchange, n.routing_key, n.amqp_body()) for n in items])
        self.progress.published += len(items)
        self.sent_by_exchange.update(n.exchange for n in items)
        PUBLISHED.inc(len(items))

    def _mark_done(self) -> None:
        if self.done and self._held and not self.released:
            if not self.progress.holding:
                log.info("publisher holding held_back=%d until POST /release", len(self._held))
            self.progress.holding = True

    async def publish_until(self, instant: datetime) -> int:
        """Publish every notification due at or before ``instant``; returns how many."""
        start = self._next
        while not self.done and self._items[self._next].published_at <= instant:
            end = self._next
            while (
                end < len(self._items)
                and end - self._next < self._batch
                and self._items[end].published_at <= instant
            ):
                end += 1
            await self._send(self._items[self._next : end])
            self._next = end
        self._mark_done()
        return self._next - start

    async def publish_paced(self) -> None:
        """Publish everything, each notification once the clock reaches its instant (factor 0: now)."""
        while not self.done:
            due = self._items[self._next].published_at
            now = self._clock.now()
            if self._clock.factor == 0.0 or now >= due:
                await self.publish_until(now if self._clock.factor else due)
                continue
            wait = (due - now).total_seconds() / self._clock.factor
            await anyio.sleep(min(max(wait, 0.0), MAX_NAP_S))
        self._mark_done()
        log.info("publisher finished published=%d held=%d", self.progress.published, len(self._held))

    def check_release(self) -> None:
        """Raise ReleaseRefused unless a release is possible now."""
        if not self._held:
            raise ReleaseRefused("nothing is held back (the held-back fault is off or held nothing)")
        if self.released:
            raise ReleaseRefused("the held-back share was released already")
        if not self.progress.holding:
            raise ReleaseRefused("not holding yet: the month is still being published")

    async def release(self) -> int:
        """Send the held-back share (in its own order); returns how many."""
        self.check_release()
        self.released = True
        self.progress.holding = False
        for start in range(0, len(self._held), self._batch):
            await self._send(self._held[start : start + self._batch])
        self.released_event.set()
        log.info("publisher released held_back=%d", len(self._held))
        return len(self._held)


def clock_document(app: Quart) -> dict[str, Any]:
    """The ``GET /clock`` document of a fake cloud app, built from its state."""
    state = app.config["FAKE_CLOUD"]
    return {
        "virtual_now": format_instant(state.clock.now()),
        "factor": state.clock.factor,
        "published": state.progress.published,
        "total": state.progress.total,
        "held": state.progress.held,
        "holding": state.progress.holding,
        "period_from": format_instant(state.world.period_from),
        "period_to": format_instant(state.world.period_to),
    }


class Releaser(Protocol):
    """Whatever sends the held-back share: a :class:`Publisher`, or the address of the month's
    publisher actor. ``release`` raises ReleaseRefused, before sending anything, when it cannot."""

    async def release(self) -> int: ...


def add_release_route(app: Quart, publisher: Releaser) -> None:
    """``POST /release`` on the fake cloud's control endpoint: 200 with the pre-release clock document,
    409 when nothing is held, already released or not holding yet, 415 for a body that is not JSON."""

    async def release() -> Response:
        if "Origin" in request.headers or "Sec-Fetch-Site" in request.headers:
            return _json({"error": "requests from a browser are refused"}, 403)
        raw = await request.get_data()
        if raw.strip():
            try:
                orjson.loads(raw)
            except orjson.JSONDecodeError:
                return _json({"error": "the body must be JSON (or empty)"}, 415)
        elif request.content_type and "json" not in request.content_type:
            return _json({"error": "the body must be JSON (or empty)"}, 415)
        before = clock_document(app)
        try:
            await publisher.release()
        except ReleaseRefused as exc:
            return _json({"error": str(exc)}, 409)
        return _json(before, 200)

    app.add_url_rule("/release", "release", release, methods=["POST"])


def _json(doc: dict[str, Any], status: int) -> Response:
    return Response(orjson.dumps(doc), status=status, content_type="application/json")
