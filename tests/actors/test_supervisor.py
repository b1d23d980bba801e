"""Supervisor: restarts with backoff, the intensity limit, ordered start and reverse stop, the grace."""

from __future__ import annotations

import itertools
import random

import anyio
import pytest
from prometheus_client import REGISTRY

from tally.actors import ActorContext, ChildSpec, Supervisor, SupervisorGaveUp
from tally.actors.internals import Backoff, Intensity, Restart, SupervisorState

pytestmark = pytest.mark.anyio

NO_JITTER = Backoff(initial_s=0.05, multiplier=2.0, max_s=1.0, jitter=0.0)


def restarts(actor: str) -> float:
    return REGISTRY.get_sample_value("tally_actor_restarts_total", {"actor": actor}) or 0.0


async def idle(ctx: ActorContext) -> None:
    ctx.started()
    await ctx.wait_stopping()


async def test_crashing_child_is_restarted_with_exponential_backoff() -> None:
    starts: list[float] = []
    before = restarts("flaky-backoff")

    async def flaky(ctx: ActorContext) -> None:
        starts.append(anyio.current_time())
        if len(starts) <= 3:
            raise RuntimeError("boom")
        ctx.started()
        await ctx.wait_stopping()

    sup = Supervisor([ChildSpec("flaky-backoff", flaky)], backoff=NO_JITTER, intensity=Intensity(10, 60))
    async with anyio.create_task_group() as tg:
        await tg.start(sup.run)
        assert sup.ready
        sup.stop()

    assert len(starts) == 4
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    for gap, expected in zip(gaps, [0.05, 0.1, 0.2], strict=True):
        assert expected <= gap < expected + 0.5  # generous: the machine may be busy
    assert restarts("flaky-backoff") - before == 3
    assert sup.statistics().children[0].restarts == 3


def test_backoff_jitter_stays_within_its_fraction() -> None:
    backoff = Backoff(initial_s=1.0, multiplier=2.0, max_s=5.0, jitter=0.2)
    rng = random.Random(7)
    delays = [backoff.delay(attempt, rng) for attempt in (1, 2, 3, 4, 5) for _ in range(50)]
    assert all(0.8 <= d <= 6.0 for d in delays)
    assert len({round(d, 6) for d in delays[:50]}) > 1  # jittered, not constant
    assert max(backoff.delay(10, rng) for _ in range(50)) <= 5.0 * 1.2


async def test_intensity_limit_stops_the_tree_and_raises() -> None:
    crashes = 0
    neighbour: list[str] = []

    async def always_crashes(ctx: ActorContext) -> None:
        nonlocal crashes
        ctx.started()
        crashes += 1
        raise RuntimeError("still broken")

    async def neighbour_actor(ctx: ActorContext) -> None:
        ctx.started()
        await ctx.wait_stopping()
        neighbour.append("stopped cleanly")

    sup = Supervisor(
        [ChildSpec("neighbour", neighbour_actor), ChildSpec("broken", always_crashes)],
        backoff=Backoff(initial_s=0.001, jitter=0.0),
        intensity=Intensity(max_restarts=3, within_s=10),
    )
    with anyio.fail_after(5), pytest.raises(SupervisorGaveUp, match="broken") as info:
        await sup.run()
    assert crashes == 4  # the first run plus three restarts; the fourth crash is one too many
    assert info.value.max_restarts == 3
    assert neighbour == ["stopped cleanly"]
    assert sup.statistics().state is SupervisorState.STOPPED


async def test_giving_up_names_the_last_error_in_one_line_through_groups() -> None:
    async def disk_full(ctx: ActorContext) -> None:
        ctx.started()
        raise ExceptionGroup("unhandled errors in a TaskGroup", [OSError("disk full\non /var/lib/tally")])

    sup = Supervisor(
        [ChildSpec("collector", disk_full)],
        backoff=Backoff(initial_s=0.001, jitter=0.0),
        intensity=Intensity(max_restarts=2, within_s=10),
    )
    with anyio.fail_after(5), pytest.raises(SupervisorGaveUp) as info:
        await sup.run()
    assert str(info.value) == (
        "supervisor 'root' gave up: actor 'collector' crashed again after 2 restarts within 10s; "
        "last error: OSError: disk full on /var/lib/tally"
    )


async def test_restarts_spread_out_in_time_do_not_trip_the_limit() -> None:
    runs = 0
    fifth = anyio.Event()

    async def crashes_slowly(ctx: ActorContext) -> None:
        nonlocal runs
        ctx.started()
        runs += 1
        if runs > 4:
            fifth.set()
            await ctx.wait_stopping()
            return
        raise RuntimeError("occasional")

    sup = Supervisor(
        [ChildSpec("slow-crasher", crashes_slowly)],
        backoff=Backoff(initial_s=0.12, multiplier=1.0, jitter=0.0),
        intensity=Intensity(max_restarts=2, within_s=0.2),
    )
    async with anyio.create_task_group() as tg:
        await tg.start(sup.run)
        with anyio.fail_after(5):
            await fifth.wait()
        sup.stop()
    assert runs == 5


async def test_children_start_in_order_and_stop_in_reverse() -> None:
    events: list[str] = []

    def make(name: str, ready_after: float) -> ChildSpec:
        async def run(ctx: ActorContext) -> None:
            events.append(f"start {name}")
            await anyio.sleep(ready_after)  # the next child must wait for this one to be ready
            ctx.started()
            try:
                await ctx.wait_stopping()
            finally:
                events.append(f"stop {name}")

        return ChildSpec(name, run)

    sup = Supervisor([make("a", 0.05), make("b", 0.0), make("c", 0.02)])
    async with anyio.create_task_group() as tg:
        await tg.start(sup.run)
        assert events == ["start a", "start b", "start c"]
        sup.stop()
    assert events == ["start a", "start b", "start c", "stop c", "stop b", "stop a"]


async def test_child_ignoring_stop_is_cancelled_at_end_of_grace() -> None:
    outcome: list[str] = []

    async def stubborn(ctx: ActorContext) -> None:
        ctx.started()
        try:
            await anyio.sleep(60)
        finally:
            outcome.append("cancelled")

    async def polite(ctx: ActorContext) -> None:
        ctx.started()
        await ctx.wait_stopping()
        outcome.append("polite stopped")

    sup = Supervisor([ChildSpec("polite", polite), ChildSpec("stubborn", stubborn)], shutdown_grace_s=0.3)
    async with anyio.create_task_group() as tg:
        await tg.start(sup.run)
        began = anyio.current_time()
        sup.stop()
    took = anyio.current_time() - began
    assert outcome == ["cancelled", "polite stopped"]
    assert 0.3 <= took < 1.0


@pytest.mark.parametrize(
    ("policy", "crash", "expected_runs"),
    [
        (Restart.PERMANENT, False, 3),
        (Restart.PERMANENT, True, 3),
        (Restart.TRANSIENT, False, 1),
        (Restart.TRANSIENT, True, 3),
        (Restart.TEMPORARY, True, 1),
        (Restart.TEMPORARY, False, 1),
    ],
)
async def test_restart_policies(policy: Restart, crash: bool, expected_runs: int) -> None:
    runs = 0

    async def worker(ctx: ActorContext) -> None:
        nonlocal runs
        runs += 1
        if runs >= 3:
            await idle(ctx)
            return
        if crash:
            raise ValueError("crash")

    sup = Supervisor(
        [ChildSpec("worker", worker, policy), ChildSpec("keeper", idle)],
        backoff=Backoff(initial_s=0.001, jitter=0.0),
    )
    async with anyio.create_task_group() as tg:
        await tg.start(sup.run)
        await anyio.sleep(0.1)
        sup.stop()
    assert runs == expected_runs


async def test_stop_during_startup_does_not_hang() -> None:
    async def never_ready(ctx: ActorContext) -> None:
        await ctx.wait_stopping()

    sup = Supervisor([ChildSpec("never-ready", never_ready), ChildSpec("after", idle)])
    with anyio.fail_after(2):
        async with anyio.create_task_group() as tg:
            tg.start_soon(sup.run)
            await anyio.sleep(0.05)
            sup.stop()
    assert sup.statistics().state is SupervisorState.STOPPED


def test_duplicate_child_names_are_refused() -> None:
    with pytest.raises(ValueError, match="duplicate child names"):
        Supervisor([ChildSpec("x", idle), ChildSpec("x", idle)])
