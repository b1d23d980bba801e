"""A wall clock that steps: told once, and a run of a cloud never dated before one already recorded.

``WallClock`` is driven by injected clocks (a wall and a monotonic one the test moves);
``run_instant`` is pure and checked over any sequence of wall readings, steps included; the store's
part (which runs are "newer") runs on each backend with runs recorded at chosen instants.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import REGISTRY
from reconcile_support import T0, builder, minutes, open_harness

from tally.core import utc_now
from tally.openstack import OpenStackAdapter
from tally.reconcile._clock import WallClock, after_newer_runs, run_instant
from tally.reconcile._run import RunSettings, run_sync
from tally.store import Store


def world():  # type: ignore[no-untyped-def]
    b = builder()
    p = b.project("alpha")
    f = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    b.instance(p, f, created_at=T0 + minutes(1))
    return b.build()


class Clocks:
    """A wall and a monotonic clock the test moves: ``advance`` both, ``step`` the wall alone."""

    def __init__(self) -> None:
        self.mono = 1000.0
        self.wall_at = T0

    def advance(self, seconds: float) -> None:
        self.mono += seconds
        self.wall_at += timedelta(seconds=seconds)

    def step(self, seconds: float) -> None:
        self.wall_at += timedelta(seconds=seconds)

    def wall(self) -> datetime:
        return self.wall_at

    def monotonic(self) -> float:
        return self.mono


def steps(direction: str) -> float:
    return REGISTRY.get_sample_value("tally_clock_steps_total", {"direction": direction}) or 0.0


def test_a_step_forward_then_back_is_told_once_each(caplog: pytest.LogCaptureFixture) -> None:
    clocks = Clocks()
    clock = WallClock(clocks.wall, clocks.monotonic)
    forward, back = steps("forward"), steps("back")
    caplog.set_level(logging.INFO, logger="tally.reconcile._clock")
    for _ in range(10):
        clocks.advance(60)
        assert clock.now() == clocks.wall_at
    clocks.advance(1.5)
    clocks.step(1.5)  # within the 2 s a slew or a scheduler's lateness may account for
    clock.now()
    assert caplog.records == []
    clocks.step(3600)
    for _ in range(5):
        clocks.advance(60)
        clock.now()
    clocks.step(-3600)
    for _ in range(5):
        clocks.advance(60)
        clock.now()
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "wall clock stepped by +3600.0 s against the monotonic clock; sync runs stay dated after each "
        "cloud's newest run",
        "wall clock stepped by -3600.0 s against the monotonic clock; sync runs stay dated after each "
        "cloud's newest run",
    ]
    assert all(r.levelno == logging.WARNING for r in caplog.records)
    assert (steps("forward"), steps("back")) == (forward + 1, back + 1)


@given(st.lists(st.integers(min_value=-7200, max_value=7200), min_size=1, max_size=40))
def test_runs_are_dated_one_way_whatever_the_wall_clock_does(moves: list[int]) -> None:
    """Each run reads a wall clock moved by ``moves`` (any size, either way); the recorded instants
    only ever grow, and each is the wall clock unless a recorded run is at or after it."""
    wall = T0
    recorded: list[datetime] = []
    for move in moves:
        wall += timedelta(seconds=move)
        newer = [at for at in recorded if at > wall - timedelta(microseconds=1)]
        instant = run_instant(wall, newer)
        assert instant >= wall
        assert instant == wall or instant == max(recorded) + timedelta(microseconds=1)
        if recorded:
            assert instant > recorded[-1]
        recorded.append(instant)


def test_no_newer_run_leaves_the_wall_clock() -> None:
    assert run_instant(T0, []) == T0
    assert run_instant(T0, [T0 - timedelta(seconds=1)]) == T0
    assert run_instant(T0, [T0]) == T0 + timedelta(microseconds=1)


@pytest.mark.anyio
async def test_after_a_step_back_a_run_is_dated_after_the_clouds_newest_run(store: Store) -> None:
    cloud = f"os-clock-{uuid.uuid4().hex[:8]}"
    ahead = T0 + timedelta(hours=1)
    # Runs recorded while the clock was an hour ahead: one completed, one failed after it.
    completed = await store.start_sync_run(cloud, ahead)
    await store.finish_sync_run(completed, "completed", {}, ahead + timedelta(seconds=5))
    failed = await store.start_sync_run(cloud, ahead + timedelta(minutes=1))
    await store.finish_sync_run(failed, "failed", {}, ahead + timedelta(minutes=1, seconds=5))

    # The clock stepped back to T0: the next run is dated just after the newest one, not at T0.
    instant = await after_newer_runs(store, cloud, T0)
    assert instant == ahead + timedelta(minutes=1, microseconds=1)
    assert instant > (await store.last_completed_sync_started_at(cloud) or T0)
    # Once real time passed them, the wall clock dates runs again.
    later = ahead + timedelta(minutes=2)
    assert await after_newer_runs(store, cloud, later) == later


@pytest.mark.anyio
async def test_a_run_of_the_wall_clock_behind_the_clouds_runs_is_dated_and_ends_after_them(
    store: Store, tmp_path: Path
) -> None:
    """The real wall clock, behind runs recorded an hour ahead of it (as after a step back): the run is
    dated just after them, and its end is not before its start."""
    async with open_harness(world(), store, tmp_path) as h:
        ahead = utc_now() + timedelta(hours=1)
        earlier = await h.store.start_sync_run(h.cloud, ahead)
        await h.store.finish_sync_run(earlier, "completed", {}, ahead + timedelta(seconds=5))
        h.at(T0 + minutes(60))
        outcome = await run_sync(
            h.entry,
            store=h.store,
            pipeline=h.pipeline,
            open_adapter=OpenStackAdapter,
            settings=RunSettings(settle_s=h.settle_s, budget_s=h.budget_s),
        )
        row = await h.run_row(outcome)
        assert row["started_at"] == ahead + timedelta(microseconds=1)
        assert row["completed_at"] >= row["started_at"]
        assert await h.store.last_completed_sync_started_at(h.cloud) == row["started_at"]
