"""Request: a message that wants an answer, and ``ask``, the caller's side of it.

An actor that answers requests takes ``Request`` objects from its mailbox. ``ask`` puts one in and
waits on the request's reply stream, a memory object stream of one item that only the actor sends on:

- The actor answers once, with a value (``answer``) or an error (``fail``). An error goes back to the
  caller, not to the supervisor: the caller asked, the caller deals with the answer.
- When the caller goes away (cancelled: a client that hung up, a timeout of its own) the request is
  withdrawn: an actor that has not taken it yet skips it (``withdrawn``), and work done for it under
  ``handle`` is cancelled, so nothing is left behind.
- When the actor drops the request unanswered (it stopped, or crashed, with the request in hand) the
  caller gets ``ActorStopped``; so it does at once when the mailbox is closed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from ._errors import ActorStopped
from ._mailbox import Mailbox

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class _Outcome(Generic[R]):
    value: R | None = None
    error: Exception | None = None


class Request(Generic[T, R]):
    """``message`` and the way back to whoever asked. Invariant: answered at most once."""

    def __init__(self, message: T, reply: MemoryObjectSendStream[_Outcome[R]]) -> None:
        self.message = message
        self._reply = reply
        self._scope: anyio.CancelScope | None = None
        self.withdrawn = False

    def answer(self, value: R) -> None:
        self._settle(_Outcome(value=value))

    def fail(self, error: Exception) -> None:
        self._settle(_Outcome(error=error))

    def drop(self) -> None:
        """Leave the request unanswered: the caller gets ``ActorStopped`` (or has gone already)."""
        self._reply.close()

    async def handle(self, work: Callable[[T], Awaitable[R]]) -> None:
        """Answer with what ``work(message)`` returns or raises; ``work`` is cancelled when the caller
        withdraws, and not started for a request withdrawn already."""
        if self.withdrawn:
            self.drop()
            return
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                try:
                    value = await work(self.message)
                except Exception as exc:
                    self.fail(exc)
                else:
                    self.answer(value)
        finally:
            # Cancelled from outside (the actor stopping past its grace): the caller sees ActorStopped.
            self._scope = None
            self.drop()

    def withdraw(self) -> None:
        """The caller's side: it left. Cancels the work under ``handle``; a later answer goes nowhere."""
        self.withdrawn = True
        self._reply.close()
        if self._scope is not None:
            self._scope.cancel()

    def _settle(self, outcome: _Outcome[R]) -> None:
        try:
            self._reply.send_nowait(outcome)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.WouldBlock):
            pass  # the caller left, or this request was answered already: nobody to tell
        finally:
            self._reply.close()


async def ask(mailbox: Mailbox[Request[T, R]], message: T) -> R:
    """Send ``message`` to the actor behind ``mailbox`` and return its answer.

    Raises what the actor's work raised, or ``ActorStopped`` when the mailbox is closed or the actor
    dropped the request. Waits while the mailbox is full. A caller that wants a deadline puts one
    around the call; cancelling the call withdraws the request.
    """
    send, receive = anyio.create_memory_object_stream[_Outcome[R]](1)
    request: Request[T, R] = Request(message, send)
    outcome: _Outcome[R] | None = None
    try:
        with receive:
            await mailbox.send(request)
            try:
                outcome = await receive.receive()
            except anyio.EndOfStream:
                raise ActorStopped(mailbox.actor) from None
    finally:
        if outcome is None:
            request.withdraw()
    if outcome.error is not None:
        raise outcome.error
    return outcome.value  # type: ignore[return-value]  # value is set whenever error is None
