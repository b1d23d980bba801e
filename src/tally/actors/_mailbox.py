"""Mailbox: the bounded queue in front of an actor.

A mailbox is a memory object stream owned by one actor. Its capacity is small on purpose: when it is
full, ``send`` waits, so a fast producer slows down to the actor's pace instead of growing memory
(backpressure). The mailbox outlives any one run of its actor, so messages already queued survive a
restart and senders keep their handle.

Close rules (the three end states are kept apart):
- ``close()`` means "no more work": later sends raise ``ActorStopped``; the actor still receives what
  was queued, then ``receive`` raises ``anyio.EndOfStream``.
- The receive side is never closed while the mailbox exists, so a send never sees a broken stream.
- ``send`` is atomic under cancellation: a cancelled send delivered nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

import anyio

from ._errors import ActorStopped
from ._metrics import MAILBOX_DEPTH

T = TypeVar("T")


@dataclass(frozen=True)
class MailboxStatistics:
    """A snapshot of one mailbox."""

    depth: int
    """Messages queued and not yet received."""
    capacity: int
    """The most messages it holds; ``send`` waits while ``depth == capacity``."""
    senders_waiting: int
    """Tasks blocked in ``send`` right now: backpressure in effect."""
    closed: bool
    """True once ``close()`` was called: no more messages are taken."""


class Mailbox(Generic[T]):
    """A bounded, closable queue of messages for the actor called ``actor``."""

    def __init__(self, actor: str, capacity: int = 16) -> None:
        if capacity < 0:
            raise ValueError(f"mailbox capacity of actor {actor!r} must be >= 0, got {capacity}")
        self.actor = actor
        self.capacity = capacity
        self._send, self._receive = anyio.create_memory_object_stream[T](capacity)
        MAILBOX_DEPTH.labels(actor=actor).set_function(self._depth)

    def _depth(self) -> float:
        return float(self._receive.statistics().current_buffer_used)

    async def send(self, message: T) -> None:
        """Queue ``message``, waiting while the mailbox is full; ``ActorStopped`` once it is closed."""
        try:
            await self._send.send(message)
        except anyio.ClosedResourceError:
            raise ActorStopped(self.actor) from None

    def send_nowait(self, message: T) -> None:
        """Queue ``message`` now; ``anyio.WouldBlock`` when full, ``ActorStopped`` once closed."""
        try:
            self._send.send_nowait(message)
        except anyio.ClosedResourceError:
            raise ActorStopped(self.actor) from None

    async def receive(self) -> T:
        """The next message; ``anyio.EndOfStream`` once closed and drained."""
        return await self._receive.receive()

    def close(self) -> None:
        """Take no more messages; what is queued can still be received."""
        self._send.close()

    def statistics(self) -> MailboxStatistics:
        stats = self._receive.statistics()
        return MailboxStatistics(
            depth=stats.current_buffer_used,
            capacity=self.capacity,
            senders_waiting=stats.tasks_waiting_send,
            closed=stats.open_send_streams == 0,
        )
