"""The simulated month's actors: the publisher and the clock answer through their mailboxes only."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import cast

import anyio
import orjson
import pytest
from anyio.abc import TaskStatus

from tally.actors import ActorStopped, Mailbox, Supervisor, SupervisorGaveUp
from tally.collector import Collector, InProcessBus
from tally.simulation._month_actors import (
    ClockMailbox,
    ClockRef,
    PublisherMailbox,
    PublisherRef,
    clock_child,
    publisher_child,
)
from tally.simulation._month_tree import MonthTree
from tally.simulation.publisher import BusSink, Publisher, ReleaseRefused, add_release_route
from tally.simulator import VirtualClock, create_fake_cloud_app, generate_month
from tally.simulator.clock import PublishProgress
from tally.simulator.generator import Month

pytestmark = pytest.mark.anyio


class SignallingSink(BusSink):
    def __init__(self, bus: InProcessBus, sent: anyio.Event) -> None:
        super().__init__(bus)
        self._sent = sent

    async def publish_many(self, items: Sequence[tuple[str, str, bytes]]) -> None:
        await super().publish_many(items)
        self._sent.set()


class Actors:
    def __init__(self, month: Month) -> None:
        self.clock_value = VirtualClock(month.period_from)
        self.progress = PublishProgress()
        self.bus = InProcessBus(max_buffer=100_000)
        self.first_sent = anyio.Event()
        publisher_box: PublisherMailbox = Mailbox("publisher", 4)
        clock_box: ClockMailbox = Mailbox("clock", 4)
        self.publisher = PublisherRef(publisher_box, self.progress)
        self.clock = ClockRef(clock_box)

        def make() -> Publisher:
            sink = SignallingSink(self.bus, self.first_sent)
            return Publisher(month.notifications, month.held_back, sink, self.clock_value, self.progress)

        self.supervisor = Supervisor(
            [clock_child(self.clock_value, clock_box), publisher_child(make, publisher_box)]
        )


@asynccontextmanager
async def running(month: Month) -> AsyncIterator[Actors]:
    actors = Actors(month)
    async with anyio.create_task_group() as tg:
        await tg.start(actors.supervisor.run)
        try:
            yield actors
        finally:
            actors.supervisor.stop()


def small_month() -> Month:
    return generate_month(1, "2026-07", scale=0.3, days=2, faults="held-back")


async def test_the_publisher_actor_publishes_counts_and_releases_as_asked() -> None:
    month = small_month()
    assert month.held_back
    first_day = month.period_from + timedelta(days=1)
    due = sum(1 for n in month.notifications if n.published_at <= first_day)
    async with running(month) as actors:
        assert await actors.publisher.publish_until(first_day) == due
        assert actors.progress.published == due
        exchanges = tuple(sorted({n.exchange for n in month.notifications}))
        assert await actors.publisher.sent_to(exchanges) == due
        # The publisher's refusal crosses the mailbox back to whoever asked.
        with pytest.raises(ReleaseRefused, match="not holding yet"):
            await actors.publisher.release()
        await actors.publisher.publish_until(month.period_to)
        assert actors.progress.holding
        assert await actors.publisher.release() == len(month.held_back)
        with pytest.raises(ReleaseRefused, match="released already"):
            await actors.publisher.release()
    # Stopped: the mailbox is closed, and an ask says so at once.
    with pytest.raises(ActorStopped):
        await actors.publisher.publish_until(month.period_to)


async def test_post_release_asks_the_publisher_actor() -> None:
    month = small_month()
    app = create_fake_cloud_app(month.world, VirtualClock(month.period_from))
    async with running(month) as actors:
        add_release_route(app, actors.publisher)
        client = app.test_client()
        refused = await client.post("/release")
        assert refused.status_code == 409
        assert "not holding yet" in orjson.loads(await refused.get_data())["error"]
        await actors.publisher.publish_until(month.period_to)
        released = await client.post("/release")
        assert released.status_code == 200
        assert actors.progress.published == len(month.notifications) + len(month.held_back)


async def test_a_release_asked_during_the_paced_run_is_answered_at_once() -> None:
    """The paced run goes on in the actor's task group: a request meanwhile is not queued behind it."""
    month = small_month()
    async with running(month) as actors:
        # Two days at 100 000: under two seconds of wall time.
        await actors.clock.rebase(100_000.0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(actors.publisher.publish_paced)
            with anyio.fail_after(5.0):
                await actors.first_sent.wait()  # the paced run has begun
            with anyio.fail_after(1.0), pytest.raises(ReleaseRefused, match="not holding yet"):
                await actors.publisher.release()
        assert actors.progress.published == len(month.notifications)
        assert await actors.publisher.release() == len(month.held_back)


async def test_the_clock_actor_is_the_one_that_moves_the_clock() -> None:
    month = small_month()
    async with running(month) as actors:
        reading = await actors.clock.reading()
        assert (reading.now, reading.factor) == (month.period_from, 0.0)
        later = month.period_from + timedelta(hours=5)
        assert (await actors.clock.set(later)).now == later
        assert actors.clock_value.now() == later
        running_reading = await actors.clock.rebase(60.0)
        assert running_reading.factor == 60.0 == actors.clock_value.factor
        stopped = await actors.clock.rebase(0.0)
        assert stopped.factor == 0.0
        assert stopped.now >= later
    with pytest.raises(ActorStopped):
        await actors.clock.reading()


class CrashingCollector:
    """Starts, then fails: as a collector whose broker went away for good."""

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        await anyio.sleep(0.05)
        raise RuntimeError("the broker went away")


async def test_an_actor_that_crashes_fails_the_month_instead_of_restarting() -> None:
    month = small_month()
    clock = VirtualClock(month.period_from)
    progress = PublishProgress()
    app = create_fake_cloud_app(month.world, clock, progress=progress)
    sink = BusSink(InProcessBus(max_buffer=100_000))
    tree = MonthTree(month, app, sink, cast(Collector, CrashingCollector()), clock, progress)
    with pytest.raises(BaseExceptionGroup) as caught:
        async with anyio.create_task_group() as tg:
            await tg.start(tree.supervisor.run)
            assert tree.base_url.startswith("http://127.0.0.1:")
            assert await tree.publisher.publish_until(month.period_from) >= 0
            await anyio.sleep(5)  # the tree stops before this ends, and this task is cancelled
    gave_up = caught.value.exceptions[0]
    assert isinstance(gave_up, SupervisorGaveUp)
    assert "the broker went away" in str(gave_up)
    assert tree.supervisor.statistics().children[-1].restarts == 0
    with pytest.raises(ActorStopped):
        await tree.publisher.release()
