"""Mailbox and Request: backpressure on a full mailbox, ask/answer, and callers that go away."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from anyio.abc import TaskGroup
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import REGISTRY

from tally.actors import (
    ActorContext,
    ActorStopped,
    ChildSpec,
    Mailbox,
    Request,
    Supervisor,
    ask,
    serve_requests,
)

pytestmark = pytest.mark.anyio


def depth(actor: str) -> float | None:
    return REGISTRY.get_sample_value("tally_actor_mailbox_depth", {"actor": actor})


def one_at_a_time(mailbox: Mailbox[Request[Any, Any]], work: Callable[[Any], Awaitable[Any]]) -> ChildSpec:
    """An actor that answers its requests one after another; at the stop request it closes its
    mailbox and answers what was queued."""

    async def take(request: Request[Any, Any], tg: TaskGroup) -> None:
        await request.handle(work)

    async def run(ctx: ActorContext) -> None:
        await serve_requests(ctx, mailbox, take)

    return ChildSpec(mailbox.actor, run)


@asynccontextmanager
async def running(*children: ChildSpec, grace_s: float = 1.0) -> AsyncIterator[Supervisor]:
    sup = Supervisor(children, shutdown_grace_s=grace_s)
    async with anyio.create_task_group() as tg:
        await tg.start(sup.run)
        yield sup
        sup.stop()


async def test_full_mailbox_blocks_the_sender() -> None:
    mailbox: Mailbox[int] = Mailbox("backpressure", capacity=2)
    await mailbox.send(1)
    await mailbox.send(2)
    assert mailbox.statistics().depth == 2
    assert depth("backpressure") == 2

    with anyio.move_on_after(0.1) as blocked:
        await mailbox.send(3)
    assert blocked.cancelled_caught, "a third send into a full mailbox of two must wait"
    assert mailbox.statistics().depth == 2  # the cancelled send delivered nothing
    with pytest.raises(anyio.WouldBlock):
        mailbox.send_nowait(3)

    async with anyio.create_task_group() as tg:
        tg.start_soon(mailbox.send, 3)  # waits for room
        await anyio.sleep(0.05)
        assert mailbox.statistics().senders_waiting == 1
        assert [await mailbox.receive() for _ in range(3)] == [1, 2, 3]
    assert depth("backpressure") == 0


async def test_ask_returns_the_answer_and_errors_go_to_the_caller() -> None:
    async def double(message: int) -> int:
        if message < 0:
            raise ValueError(f"negative: {message}")
        return message * 2

    mailbox: Mailbox[Request[int, int]] = Mailbox("doubler")
    async with running(one_at_a_time(mailbox, double)):
        assert await ask(mailbox, 21) == 42
        with pytest.raises(ValueError, match="negative: -1"):
            await ask(mailbox, -1)
        assert await ask(mailbox, 5) == 10  # the error did not crash the actor


async def test_a_deadline_around_ask_withdraws_the_request() -> None:
    seen: list[str] = []

    async def slow(message: str) -> str:
        try:
            await anyio.sleep(10)
        except anyio.get_cancelled_exc_class():
            seen.append(f"{message} cancelled")
            raise
        return message

    mailbox: Mailbox[Request[str, str]] = Mailbox("slowpoke")
    async with running(one_at_a_time(mailbox, slow)):
        began = anyio.current_time()
        with pytest.raises(TimeoutError), anyio.fail_after(0.2):
            await ask(mailbox, "first")
        assert anyio.current_time() - began < 1
        await anyio.sleep(0.05)
    assert seen == ["first cancelled"]


async def test_cancelled_caller_leaves_nothing_behind() -> None:
    handled: list[str] = []
    cancelled: list[str] = []
    release = anyio.Event()

    async def work(message: str) -> str:
        handled.append(message)
        if message == "blocking":
            try:
                await anyio.sleep(10)
            except anyio.get_cancelled_exc_class():
                cancelled.append(message)
                raise
        if message == "gate":
            await release.wait()
        return message.upper()

    mailbox: Mailbox[Request[str, str]] = Mailbox("callee", capacity=4)
    async with running(one_at_a_time(mailbox, work)), anyio.create_task_group() as callers:
        # A caller whose request is being worked on goes away: the work is cancelled.
        with anyio.move_on_after(0.1):
            await ask(mailbox, "blocking")
        await anyio.sleep(0.05)
        assert cancelled == ["blocking"]

        # A caller whose request is still queued goes away: the request is skipped.
        callers.start_soon(ask, mailbox, "gate")
        await anyio.sleep(0.05)
        with anyio.move_on_after(0.1):
            await ask(mailbox, "queued")
        assert mailbox.statistics().depth == 1
        release.set()
        assert await ask(mailbox, "after") == "AFTER"
        assert mailbox.statistics().depth == 0
        assert depth("callee") == 0
    assert handled == ["blocking", "gate", "after"]


async def test_a_closed_mailbox_refuses_at_once() -> None:
    async def echo(message: int) -> int:
        return message

    mailbox: Mailbox[Request[int, int]] = Mailbox("drainer", capacity=8)
    with anyio.fail_after(2):
        async with running(one_at_a_time(mailbox, echo)) as sup:
            sup.stop()
    assert mailbox.statistics().closed
    with pytest.raises(ActorStopped, match="drainer"):
        await ask(mailbox, 5)


async def test_actor_stopped_mid_request_tells_the_caller() -> None:
    async def slow(message: int) -> int:
        await anyio.sleep(10)
        return message

    mailbox: Mailbox[Request[int, int]] = Mailbox("dies-mid-call")
    async with running(one_at_a_time(mailbox, slow), grace_s=0.1) as sup, anyio.create_task_group() as tg:

        async def stop_soon() -> None:
            await anyio.sleep(0.05)
            sup.stop()

        tg.start_soon(stop_soon)
        with pytest.raises(ActorStopped), anyio.fail_after(5):
            await ask(mailbox, 1)


async def test_a_request_answered_twice_keeps_the_first_answer() -> None:
    send, receive = anyio.create_memory_object_stream[Any](1)
    request: Request[str, str] = Request("m", send)
    request.answer("first")
    request.answer("second")
    request.fail(ValueError("late"))
    with receive:
        assert (await receive.receive()).value == "first"
        with pytest.raises(anyio.EndOfStream):
            await receive.receive()


@settings(max_examples=25, deadline=None)
@given(
    messages=st.lists(st.integers(), max_size=40),
    capacity=st.integers(min_value=0, max_value=6),
    producers=st.integers(min_value=1, max_value=3),
)
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_every_message_is_received_once_in_each_senders_order(
    backend: str, messages: list[int], capacity: int, producers: int
) -> None:
    async def main() -> list[tuple[int, int]]:
        received: list[tuple[int, int]] = []
        mailbox: Mailbox[tuple[int, int]] = Mailbox("property", capacity=capacity)

        async def drain() -> None:
            while True:
                try:
                    received.append(await mailbox.receive())
                except anyio.EndOfStream:
                    return
                await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as tg:
            tg.start_soon(drain)
            async with anyio.create_task_group() as senders:
                for producer in range(producers):

                    async def send_all(producer: int = producer) -> None:
                        for message in messages:
                            await mailbox.send((producer, message))

                    senders.start_soon(send_all)
            mailbox.close()
        return received

    received = anyio.run(main, backend=backend)
    assert len(received) == len(messages) * producers
    for producer in range(producers):
        assert [m for p, m in received if p == producer] == messages
