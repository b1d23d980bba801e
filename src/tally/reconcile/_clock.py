"""The instant a sync run is dated at: the wall clock, watched for steps, never behind the cloud's runs.

A run's ``started_at`` is the bound of the next run's deleted-servers window and the instant its
corrections are dated at, so it must move one way. The wall clock does not always: an NTP step, an
operator's ``date -s``, a VM resumed from a snapshot. ``WallClock`` reads it beside the monotonic clock
and tells a step (the two moved apart by more than ``step_s`` between two readings) once, with its
size, counted in ``tally_clock_steps_total``. ``run_instant`` then dates a run no earlier than just
after the cloud's newest run (whatever its status, so also after its last completed one): after a step
back, runs are dated just after the bogus instant until real time passes it, rather than before it.
A run told its instant (the simulator, ``tally sync --at``) keeps it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any, Protocol

from prometheus_client import Counter

from tally.core import ONE_MICROSECOND, utc_now

log = logging.getLogger(__name__)

STEP_S = 2.0

CLOCK_STEPS = Counter(
    "tally_clock_steps_total",
    "Steps of the wall clock against the monotonic one (more than 2 s between two readings), by "
    "direction; sync runs stay dated after the cloud's newest run.",
    ["direction"],
)
for _direction in ("forward", "back"):
    CLOCK_STEPS.labels(_direction)


class WallClock:
    """``now()`` is the wall clock; a step of it against the monotonic clock is logged once."""

    def __init__(
        self,
        wall: Callable[[], datetime] = utc_now,
        monotonic: Callable[[], float] = time.monotonic,
        step_s: float = STEP_S,
    ) -> None:
        self._wall = wall
        self._monotonic = monotonic
        self._step_s = step_s
        # wall − monotonic at the last reading: constant while neither clock steps (a slew drifts it
        # by milliseconds a minute, far below a step).
        self._offset: float | None = None

    def now(self) -> datetime:
        wall = self._wall()
        offset = wall.timestamp() - self._monotonic()
        if self._offset is not None and abs(offset - self._offset) > self._step_s:
            step = offset - self._offset
            CLOCK_STEPS.labels("forward" if step > 0 else "back").inc()
            log.warning(
                "wall clock stepped by %+.1f s against the monotonic clock; sync runs stay dated after "
                "each cloud's newest run",
                step,
            )
        self._offset = offset
        return wall


WALL_CLOCK = WallClock()


def run_instant(wall: datetime, newer_runs: Iterable[datetime]) -> datetime:
    """A run's ``started_at``: ``wall``, or just after the newest of the cloud's runs started at or
    after it (there are some only when the clock went back)."""
    floor = max(newer_runs, default=None)
    if floor is not None and floor >= wall:
        return floor + ONE_MICROSECOND
    return wall


# How far past the wall clock the newer runs are looked for (the query needs an upper end); ten years
# is beyond any real step.
NEWER_RUNS_HORIZON = timedelta(days=3650)


class RunsStore(Protocol):
    """The store method ``after_newer_runs`` reads (``tally.store.Store`` provides it)."""

    async def sync_runs_between(
        self, cloud: str, after: datetime, before: datetime, *, limit: int | None = None
    ) -> list[dict[str, Any]]: ...


async def after_newer_runs(store: RunsStore, cloud: str, wall: datetime) -> datetime:
    """``wall``, or just after the cloud's newest run when one is dated at or after it (``run_instant``);
    the caller holds the cloud's lock, so no run starts meanwhile."""
    newer = await store.sync_runs_between(cloud, wall - ONE_MICROSECOND, wall + NEWER_RUNS_HORIZON)
    instant = run_instant(wall, (run["started_at"] for run in newer))
    if instant != wall:
        log.info(
            "sync dated after the cloud's newest run cloud=%s wall=%s at=%s",
            cloud,
            wall.isoformat(),
            instant.isoformat(),
        )
    return instant
