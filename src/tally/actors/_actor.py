"""Actor: a named task that handles the messages of its bounded mailbox one at a time.

Two ways in:

- ``send(message)``: fire and forget. Waits while the mailbox is full (backpressure). If handling it
  raises, the actor crashes and its supervisor decides about a restart; queued messages stay queued.
- ``call(message, timeout_s=...)``: send with a one-shot reply slot and wait for the handler's return
  value. An exception raised by the handler goes back to the caller, not to the supervisor: the caller
  asked, the caller deals with the answer. When the caller goes away (cancelled, or its timeout hit)
  the request is withdrawn: if still queued it is skipped, if being handled the handler is cancelled.
  Nothing is left behind.

On a stop request the actor closes its mailbox (later sends raise ``ActorStopped``), handles what was
already queued, and returns.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from ._errors import ActorStopped, CallTimeout
from ._mailbox import Mailbox, MailboxStatistics
from ._supervisor import ActorContext, ChildSpec, Restart

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class _Outcome(Generic[R]):
    value: R | None = None
    error: Exception | None = None


class _ReplySlot(Generic[R]):
    """The caller's side of one call, as seen by the actor. Invariant: answered at most once."""

    def __init__(self, send: MemoryObjectSendStream[_Outcome[R]]) -> None:
        self._send = send
        self._scope: anyio.CancelScope | None = None
        self.abandoned = False

    def abandon(self) -> None:
        """The caller left: cancel the handler if it is running; a queued request will be skipped."""
        self.abandoned = True
        if self._scope is not None:
            self._scope.cancel()

    def attach(self, scope: anyio.CancelScope) -> None:
        self._scope = scope

    def answer(self, outcome: _Outcome[R]) -> None:
        try:
            self._send.send_nowait(outcome)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the caller left between the handler returning and this answer; nobody to tell
        finally:
            self._send.close()

    def close(self) -> None:
        self._send.close()


@dataclass(frozen=True)
class _Envelope(Generic[T, R]):
    message: T
    reply: _ReplySlot[R] | None


class Actor(Generic[T, R]):
    """An actor named ``name`` whose ``handle`` is awaited for each message, one at a time.

    ``handle``'s return value is the answer to a ``call``; for a ``send`` it is dropped.
    """

    def __init__(
        self,
        name: str,
        handle: Callable[[T], Awaitable[R]],
        *,
        capacity: int = 16,
        restart: Restart = Restart.PERMANENT,
    ) -> None:
        self.name = name
        self.restart = restart
        self._handle = handle
        self.mailbox: Mailbox[_Envelope[T, R]] = Mailbox(name, capacity)

    async def send(self, message: T) -> None:
        """Queue ``message``; waits while the mailbox is full, ``ActorStopped`` once it is closed."""
        await self.mailbox.send(_Envelope(message, None))

    def send_nowait(self, message: T) -> None:
        """Queue ``message`` now; ``anyio.WouldBlock`` when the mailbox is full."""
        self.mailbox.send_nowait(_Envelope(message, None))

    async def call(self, message: T, *, timeout_s: float) -> R:
        """Send ``message`` and return the handler's answer.

        Raises what the handler raised, ``CallTimeout`` when no answer came within ``timeout_s`` (the
        time spent waiting for mailbox room counts), ``ActorStopped`` when the actor stopped first.
        """
        send, receive = anyio.create_memory_object_stream[_Outcome[R]](1)
        slot: _ReplySlot[R] = _ReplySlot(send)
        outcome: _Outcome[R] | None = None
        try:
            with receive, anyio.move_on_after(timeout_s):
                await self.mailbox.send(_Envelope(message, slot))
                try:
                    outcome = await receive.receive()
                except anyio.EndOfStream:
                    raise ActorStopped(self.name) from None
        finally:
            if outcome is None:
                slot.abandon()
        if outcome is None:
            raise CallTimeout(self.name, timeout_s)
        if outcome.error is not None:
            raise outcome.error
        return outcome.value  # type: ignore[return-value]  # value is set whenever error is None

    def statistics(self) -> MailboxStatistics:
        return self.mailbox.statistics()

    def child(self) -> ChildSpec:
        """The supervisor entry for this actor."""
        return ChildSpec(self.name, self.run, self.restart)

    async def run(self, ctx: ActorContext) -> None:
        """Handle messages until stopped; the mailbox is closed at the stop request and then drained."""
        async with anyio.create_task_group() as tg:

            async def close_on_stop() -> None:
                await ctx.wait_stopping()
                self.mailbox.close()

            tg.start_soon(close_on_stop)
            ctx.started()
            while True:
                try:
                    envelope = await self.mailbox.receive()
                except anyio.EndOfStream:
                    break
                if envelope.reply is None:
                    await self._handle(envelope.message)
                else:
                    await self._answer(envelope.message, envelope.reply)
            tg.cancel_scope.cancel()

    async def _answer(self, message: T, reply: _ReplySlot[R]) -> None:
        if reply.abandoned:
            reply.close()
            return
        try:
            with anyio.CancelScope() as scope:
                reply.attach(scope)
                try:
                    value = await self._handle(message)
                except Exception as exc:
                    reply.answer(_Outcome(error=exc))
                else:
                    reply.answer(_Outcome(value=value))
        finally:
            # Cancelled from outside (shutdown): the caller sees EndOfStream and gets ActorStopped.
            reply.close()
