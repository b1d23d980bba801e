"""The in-process bus: the simulator publishes notifications, the collector consumes them, no broker.

It stands in for RabbitMQ when the whole pipeline runs in one process, and
feeds the same decode, map and outbox path. Acknowledgement is trivial (the
bus keeps nothing once a message is taken), but the bus still counts what was
acked so that ``drain()`` can wait until everything published is committed
and then let the collector's sender deliver it: the simulator's lockstep mode.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ._delivery import Delivery
from ._json import dumps


class InProcessBus:
    """A bounded memory stream of deliveries; ``publish`` waits when the collector falls behind."""

    def __init__(self, max_buffer: int = 10_000) -> None:
        self._send: MemoryObjectSendStream[Delivery]
        self._receive: MemoryObjectReceiveStream[Delivery]
        self._send, self._receive = anyio.create_memory_object_stream[Delivery](max_buffer)
        # Invariant: acked <= published.
        self.published = 0
        self.acked = 0
        self._acked_changed = anyio.Event()
        self._drainer: Callable[[], Awaitable[None]] | None = None

    async def publish(self, exchange: str, routing_key: str, body: bytes | str | Mapping[str, Any]) -> None:
        if isinstance(body, Mapping):
            data = dumps(body)
        elif isinstance(body, str):
            data = body.encode()
        else:
            data = bytes(body)
        # Counted before the send, so a consumer that acks at once never sees acked > published.
        self.published += 1
        try:
            await self._send.send(Delivery(data, exchange, routing_key))
        except BaseException:
            self.published -= 1
            raise

    def receiver(self) -> MemoryObjectReceiveStream[Delivery]:
        """The consumer's end (an async iterator of deliveries)."""
        return self._receive

    def __aiter__(self) -> MemoryObjectReceiveStream[Delivery]:
        return self._receive

    async def ack(self, deliveries: Sequence[Delivery]) -> None:
        self.acked += len(deliveries)
        self._acked_changed.set()
        self._acked_changed = anyio.Event()

    def set_drainer(self, drainer: Callable[[], Awaitable[None]] | None) -> None:
        """Called by the collector that consumes this bus: what "deliver what you committed" means."""
        self._drainer = drainer

    async def wait_consumed(self) -> None:
        """Return once every message published so far was committed and acked."""
        while self.acked < self.published:
            await self._acked_changed.wait()

    async def drain(self) -> None:
        """Let the collector drain: everything published is committed, then delivered to the sink."""
        await self.wait_consumed()
        if self._drainer is not None:
            await self._drainer()

    async def aclose(self) -> None:
        """No more messages: the consumer sees the end of the stream."""
        await self._send.aclose()
