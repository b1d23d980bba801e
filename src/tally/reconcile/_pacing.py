"""Pacing many clouds in one daemon: when each cloud's first scheduled run starts, and how many run at once.

Pure functions; the scheduler (``_scheduler``) and the service (``_service``) apply them.

Why stagger: a daemon that syncs every cloud at start, all at once, makes every later interval start
with the same stampede (each next run is one interval after the last, ±10 %), and the database pool
and the clouds' APIs take it all in the same seconds. Spreading the first runs over the interval
spreads every later one. The spread is by the cloud's place in the sorted names of the scheduled
clouds, so it is even (cloud ``i`` of ``n`` at ``i/n`` of its interval) and the same on every replica
and every restart; the ±10 % jitter of the slot width keeps replicas with the same config from firing
in lockstep. The first cloud by name still syncs at once, and every cloud's first run starts within
its first interval. No seed asks for a sync at start: seed 001 asks to "stagger the schedule so that
their runs do not overlap" when the pool is smaller than the clouds synced at the same time.

Why cap: each run holds a pooled connection while it reads and books, plus one dedicated connection
for its lock. Left uncapped, fifty runs would queue on a pool of ten, and the Reporting API and the
collector behind them.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

JITTER = 0.1


def stagger_offset(cloud: str, intervals: Mapping[str, int]) -> float:
    """Seconds after start of ``cloud``'s first scheduled run before jitter: ``interval * i / n``.

    ``intervals`` maps every configured cloud to its ``sync_interval_s``; the ``n`` clouds with a
    positive interval are ranked by name and ``i`` is ``cloud``'s rank. A cloud synced only on request
    (interval 0) has no offset. Raises ``KeyError`` for a cloud ``intervals`` does not name.
    """
    interval = intervals[cloud]
    if interval <= 0:
        return 0.0
    scheduled = sorted(c for c, s in intervals.items() if s > 0)
    return interval * scheduled.index(cloud) / len(scheduled)


def first_delay(cloud: str, intervals: Mapping[str, int], rng: random.Random) -> float:
    """The wait before ``cloud``'s first scheduled run: its offset, ±10 % of its slot (interval / n).

    The first cloud by name waits 0; every other lands strictly inside ``(0, interval)``: its slot
    starts at ``i/n`` and the jitter moves it by at most a tenth of a slot either way.
    """
    offset = stagger_offset(cloud, intervals)
    if offset == 0.0:
        return 0.0
    slot = intervals[cloud] / sum(1 for s in intervals.values() if s > 0)
    return offset + slot * rng.uniform(-JITTER, JITTER)


def next_delay(interval_s: float, rng: random.Random) -> float:
    """The wait before the next scheduled run: the interval, ±10 %."""
    return interval_s * (1.0 + rng.uniform(-JITTER, JITTER))


def default_max_concurrent(max_conns: int, clouds: int) -> int:
    """Concurrent sync runs when ``TALLY_REPORTING_SYNC_MAX_CONCURRENT`` is 0: half the pool, at least 1,
    at most the number of clouds.

    A run holds at most one pooled connection at a time; the other half of the pool is left to the
    Reporting API, the collector's in-process sink and the gauges, which must not queue behind syncs.
    """
    if max_conns < 1:
        raise ValueError(f"a pool of {max_conns} connections cannot hold a sync run")
    return max(1, min(max_conns // 2, max(clouds, 1)))


def max_concurrent(setting: int, max_conns: int, clouds: int) -> int:
    """The cap in force: ``setting`` when set (positive), else ``default_max_concurrent``."""
    if setting < 0:
        raise ValueError(f"TALLY_REPORTING_SYNC_MAX_CONCURRENT={setting} is below 0")
    return setting if setting > 0 else default_max_concurrent(max_conns, clouds)
