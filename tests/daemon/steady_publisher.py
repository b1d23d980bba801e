"""Notifications published at a steady rate from a thread of their own, while a test makes a fault:
the daemon under load, as an operator's bad day goes. ``published`` is how many went so far."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

import aio_pika
import anyio


class SteadyPublisher:
    """Publishes ``body(n)`` for n = 0, 1, 2, ... at ``rate`` a second on ``exchange`` until stopped."""

    def __init__(self, url: str, exchange: str, body: Callable[[int], bytes], rate: float) -> None:
        self._url = url
        self._exchange = exchange
        self._body = body
        self._every_s = 1.0 / rate
        self.published = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            anyio.run(self._publish, backend="asyncio")
        except BaseException as exc:
            self.error = exc

    async def _publish(self) -> None:
        connection = await aio_pika.connect(self._url)
        async with connection:
            channel = await connection.channel()
            target = await channel.get_exchange(self._exchange, ensure=False)
            began = time.monotonic()
            while not self._stop.is_set():
                message = aio_pika.Message(self._body(self.published), content_type="application/json")
                await target.publish(message, routing_key="notifications.info")
                self.published += 1
                # On a schedule, not a gap after each: a slow publish is made up for by the next ones.
                await anyio.sleep(max(0.0, began + self.published * self._every_s - time.monotonic()))

    def __enter__(self) -> SteadyPublisher:
        self._thread.start()
        return self

    def stop(self) -> int:
        """Stop publishing; how many were published in all."""
        self._stop.set()
        self._thread.join(timeout=30)
        if self.error is not None:
            raise AssertionError(f"the publisher failed: {self.error!r}") from self.error
        return self.published

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
