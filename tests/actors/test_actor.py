"""Actor: backpressure on a full mailbox, call/reply, timeouts, and callers that go away."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import REGISTRY

from tally.actors import Actor, ActorStopped, CallTimeout, Supervisor

pytestmark = pytest.mark.anyio


def depth(actor: str) -> float | None:
    return REGISTRY.get_sample_value("tally_actor_mailbox_depth", {"actor": actor})


@asynccontextmanager
async def running(*actors: Actor[Any, Any]) -> AsyncIterator[Supervisor]:
    sup = Supervisor([a.child() for a in actors], shutdown_grace_s=1.0)
    async with anyio.create_task_group() as tg:
        await tg.start(sup.run)
        yield sup
        sup.stop()


async def test_full_mailbox_blocks_the_sender() -> None:
    handled: list[object] = []

    all_handled = anyio.Event()

    async def handle(message: object) -> None:
        handled.append(message)
        if len(handled) == 3:
            all_handled.set()

    actor: Actor[object, None] = Actor("backpressure", handle, capacity=2)
    await actor.send(1)
    await actor.send(2)
    assert actor.statistics().depth == 2
    assert depth("backpressure") == 2

    with anyio.move_on_after(0.1) as blocked:
        await actor.send(3)
    assert blocked.cancelled_caught, "a third send into a full mailbox of two must wait"
    assert actor.statistics().depth == 2  # the cancelled send delivered nothing
    with pytest.raises(anyio.WouldBlock):
        actor.send_nowait(3)

    async with running(actor):
        await actor.send(3)  # now the actor drains and the send goes through
        with anyio.fail_after(1):
            await all_handled.wait()
    assert handled == [1, 2, 3]
    assert depth("backpressure") == 0


async def test_call_returns_the_answer_and_errors_go_to_the_caller() -> None:
    async def handle(message: int) -> int:
        if message < 0:
            raise ValueError(f"negative: {message}")
        return message * 2

    actor: Actor[int, int] = Actor("doubler", handle)
    async with running(actor):
        assert await actor.call(21, timeout_s=1) == 42
        with pytest.raises(ValueError, match="negative: -1"):
            await actor.call(-1, timeout_s=1)
        assert await actor.call(5, timeout_s=1) == 10  # the error did not crash the actor


async def test_call_timeout_withdraws_the_request() -> None:
    seen: list[str] = []

    async def handle(message: str) -> str:
        try:
            await anyio.sleep(10)
        except anyio.get_cancelled_exc_class():
            seen.append(f"{message} cancelled")
            raise
        return message

    actor: Actor[str, str] = Actor("slowpoke", handle)
    async with running(actor):
        began = anyio.current_time()
        with pytest.raises(CallTimeout, match=r"slowpoke.*0\.2s"):
            await actor.call("first", timeout_s=0.2)
        assert anyio.current_time() - began < 1
        await anyio.sleep(0.05)
    assert seen == ["first cancelled"]


async def test_cancelled_caller_leaves_nothing_behind() -> None:
    handled: list[str] = []
    cancelled: list[str] = []
    release = anyio.Event()

    async def handle(message: str) -> str:
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

    actor: Actor[str, str] = Actor("callee", handle, capacity=4)
    async with running(actor), anyio.create_task_group() as callers:
        # A caller whose request is being handled goes away: the handler is cancelled.
        with anyio.move_on_after(0.1):
            await actor.call("blocking", timeout_s=10)
        await anyio.sleep(0.05)
        assert cancelled == ["blocking"]

        # A caller whose request is still queued goes away: the request is skipped.
        callers.start_soon(actor.send, "gate")
        await anyio.sleep(0.05)
        with anyio.move_on_after(0.1):
            await actor.call("queued", timeout_s=10)
        assert actor.statistics().depth == 1
        release.set()
        assert await actor.call("after", timeout_s=1) == "AFTER"
        assert actor.statistics().depth == 0
        assert depth("callee") == 0
    assert handled == ["blocking", "gate", "after"]


async def test_stop_drains_the_mailbox_then_refuses_sends() -> None:
    handled: list[int] = []

    async def handle(message: int) -> None:
        handled.append(message)

    actor: Actor[int, None] = Actor("drainer", handle, capacity=8)
    for n in range(5):
        await actor.send(n)
    sup = Supervisor([actor.child()])
    with anyio.fail_after(2):
        async with anyio.create_task_group() as tg:
            await tg.start(sup.run)
            sup.stop()  # at once: what was queued is still handled
    assert handled == [0, 1, 2, 3, 4]
    with pytest.raises(ActorStopped, match="drainer"):
        await actor.send(5)
    with pytest.raises(ActorStopped):
        await actor.call(6, timeout_s=1)


async def test_actor_stopped_mid_call_tells_the_caller() -> None:
    async def handle(message: int) -> int:
        await anyio.sleep(10)
        return message

    actor: Actor[int, int] = Actor("dies-mid-call", handle)
    sup = Supervisor([actor.child()], shutdown_grace_s=0.1)
    async with anyio.create_task_group() as tg:
        await tg.start(sup.run)

        async def stop_soon() -> None:
            await anyio.sleep(0.05)
            sup.stop()

        tg.start_soon(stop_soon)
        with pytest.raises(ActorStopped):
            await actor.call(1, timeout_s=5)


@settings(max_examples=25, deadline=None)
@given(
    messages=st.lists(st.integers(), max_size=40),
    capacity=st.integers(min_value=0, max_value=6),
    producers=st.integers(min_value=1, max_value=3),
)
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_every_message_is_handled_once_in_each_senders_order(
    backend: str, messages: list[int], capacity: int, producers: int
) -> None:
    async def main() -> list[tuple[int, int]]:
        handled: list[tuple[int, int]] = []

        async def handle(message: tuple[int, int]) -> None:
            handled.append(message)
            await anyio.lowlevel.checkpoint()

        actor: Actor[tuple[int, int], None] = Actor("property", handle, capacity=capacity)
        sup = Supervisor([actor.child()])
        async with anyio.create_task_group() as tg:
            await tg.start(sup.run)
            async with anyio.create_task_group() as senders:
                for producer in range(producers):

                    async def send_all(producer: int = producer) -> None:
                        for message in messages:
                            await actor.send((producer, message))

                    senders.start_soon(send_all)
            sup.stop()
        return handled

    handled = anyio.run(main, backend=backend)
    assert len(handled) == len(messages) * producers
    for producer in range(producers):
        assert [m for p, m in handled if p == producer] == messages
