"""The simulated month's actors on the runtime of ``tally.actors``: the publisher, the clock, and the
serving children (the fake cloud's server, the collector).

Each actor owns its object and is reached only through its mailbox:

- the publisher actor builds its :class:`~tally.simulation.publisher.Publisher` when it starts and
  nobody else holds it; :class:`PublisherRef` asks it to publish up to an instant, to publish on the
  running clock, to release the held-back share, and how many went to some exchanges;
- the clock actor is the one place the month's :class:`~tally.simulator.clock.VirtualClock` is moved
  (set, rebased); :class:`ClockRef` asks it for a reading too.

What is read without a message, on purpose: the fake cloud and the publisher read the clock's instant
(a function of the wall time) on every listing and paced step, and the fake cloud's ``GET /clock``
reads the :class:`~tally.simulator.clock.PublishProgress` the publisher writes. The fake cloud's own
``PUT /clock`` rebases the clock as the library's control endpoint does for any caller.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import anyio
from anyio.abc import TaskGroup

from tally.actors import ActorContext, ChildSpec, Mailbox, Request, ask, serve_requests
from tally.simulator.clock import PublishProgress, VirtualClock

from .publisher import Publisher

#: Requests in flight at once: the drive asks one at a time, the release route may add one.
MAILBOX_CAPACITY = 4


@dataclass(frozen=True)
class PublishUntil:
    """Publish every notification due at or before ``instant``; answered with how many."""

    instant: datetime


@dataclass(frozen=True)
class PublishPaced:
    """Publish the rest, each once the clock reaches it; answered (0) when the rest is out."""


@dataclass(frozen=True)
class Release:
    """Send the held-back share; answered with how many, or fails with ``ReleaseRefused``."""


@dataclass(frozen=True)
class SentTo:
    """How many notifications went to ``exchanges`` so far."""

    exchanges: tuple[str, ...]


PublisherMessage = PublishUntil | PublishPaced | Release | SentTo
PublisherMailbox = Mailbox[Request[PublisherMessage, int]]


@dataclass(frozen=True)
class ClockReading:
    """The clock's instant and factor when the clock actor answered."""

    now: datetime
    factor: float


@dataclass(frozen=True)
class Rebase:
    """Continue from the current instant at ``factor``."""

    factor: float


@dataclass(frozen=True)
class SetTo:
    """Jump to ``instant``."""

    instant: datetime


@dataclass(frozen=True)
class Read:
    """Only the reading."""


ClockMessage = Rebase | SetTo | Read
ClockMailbox = Mailbox[Request[ClockMessage, ClockReading]]


class PublisherRef:
    """The publisher actor's address: every call is a request in its mailbox."""

    def __init__(self, mailbox: PublisherMailbox, progress: PublishProgress) -> None:
        self._mailbox = mailbox
        #: What the publisher has done, as ``GET /clock`` shows it (written by the actor only).
        self.progress = progress

    async def publish_until(self, instant: datetime) -> int:
        return await ask(self._mailbox, PublishUntil(instant))

    async def publish_paced(self) -> None:
        await ask(self._mailbox, PublishPaced())

    async def release(self) -> int:
        return await ask(self._mailbox, Release())

    async def sent_to(self, exchanges: tuple[str, ...]) -> int:
        return await ask(self._mailbox, SentTo(exchanges))


class ClockRef:
    """The clock actor's address: every call is a request in its mailbox."""

    def __init__(self, mailbox: ClockMailbox) -> None:
        self._mailbox = mailbox

    async def reading(self) -> ClockReading:
        return await ask(self._mailbox, Read())

    async def rebase(self, factor: float) -> ClockReading:
        return await ask(self._mailbox, Rebase(factor))

    async def set(self, instant: datetime) -> ClockReading:
        return await ask(self._mailbox, SetTo(instant))


def publisher_child(make: Callable[[], Publisher], mailbox: PublisherMailbox) -> ChildSpec:
    """The publisher actor: builds its publisher with ``make`` and answers the requests in order; the
    paced run goes on in the actor's task group, so a release asked meanwhile is answered (refused:
    the month is still being published) as before."""

    async def run(ctx: ActorContext) -> None:
        publisher = make()

        async def work(message: PublisherMessage) -> int:
            match message:
                case PublishUntil(instant):
                    return await publisher.publish_until(instant)
                case PublishPaced():
                    await publisher.publish_paced()
                    return 0
                case Release():
                    return await publisher.release()
                case SentTo(exchanges):
                    return sum(publisher.sent_by_exchange[name] for name in exchanges)

        async def take(request: Request[PublisherMessage, int], tg: TaskGroup) -> None:
            if isinstance(request.message, PublishPaced):
                tg.start_soon(request.handle, work)
            else:
                await request.handle(work)

        await serve_requests(ctx, mailbox, take)

    return ChildSpec("publisher", run)


def clock_child(clock: VirtualClock, mailbox: ClockMailbox) -> ChildSpec:
    """The clock actor: moves ``clock`` as asked and answers each request with the reading after it."""

    async def work(message: ClockMessage) -> ClockReading:
        match message:
            case Rebase(factor):
                clock.rebase(factor)
            case SetTo(instant):
                clock.set(instant)
            case Read():
                pass
        return ClockReading(clock.now(), clock.factor)

    async def take(request: Request[ClockMessage, ClockReading], tg: TaskGroup) -> None:
        await request.handle(work)

    async def run(ctx: ActorContext) -> None:
        await serve_requests(ctx, mailbox, take)

    return ChildSpec("clock", run)


def serving_child(
    name: str,
    serve: Callable[..., Coroutine[Any, Any, Any]],
    on_started: Callable[[Any], None] = lambda _: None,
) -> ChildSpec:
    """An actor that runs ``serve`` (a function taking ``task_status``) until the supervisor stops it;
    ready once ``serve`` reported its start, whose value goes to ``on_started`` (a bound port)."""

    async def run(ctx: ActorContext) -> None:
        async with anyio.create_task_group() as tg:
            on_started(await tg.start(serve))
            ctx.started()
            await ctx.wait_stopping()
            tg.cancel_scope.cancel()

    return ChildSpec(name, run)
