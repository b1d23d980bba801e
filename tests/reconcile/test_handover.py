"""The "synced within the interval" rule of scheduled runs across replicas (``_handover.is_due``), pure.

The replicas' ticks are simulated with the scheduler's own ``next_delay``: what must hold whatever
the jitter draws and the phases are is that one daemon never skips its own cadence, and that
several space each cloud's runs between ``min_gap`` and the longest tick of one of them.
"""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tally.reconcile._handover import is_due
from tally.reconcile._scheduler import JITTER, min_gap, next_delay

T = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def run(started_s: float, *, ended: bool = True) -> dict[str, Any]:
    started = T + timedelta(seconds=started_s)
    return {"started_at": started, "completed_at": started + timedelta(seconds=1) if ended else None}


def test_an_ended_run_inside_the_gap_makes_the_next_not_due_on_either_side() -> None:
    assert not is_due([run(-59)], T, 60)
    assert not is_due([run(+59)], T, 60)  # a replica whose clock runs ahead
    assert is_due([run(-60)], T, 60)
    assert is_due([], T, 60)


def test_a_run_that_never_ended_does_not_count() -> None:
    """A stale row (its replica stopped, the row failed without completed_at) is no sync of the cloud."""
    assert is_due([run(-1, ended=False)], T, 60)


@given(st.lists(st.tuples(st.floats(-200, 200), st.booleans()), max_size=8), st.randoms())
def test_order_and_duplicates_do_not_matter(runs: list[tuple[float, bool]], rng: random.Random) -> None:
    rows = [run(at, ended=ended) for at, ended in runs]
    shuffled = rows + rng.sample(rows, k=len(rows) // 2)
    rng.shuffle(shuffled)
    assert is_due(rows, T, 60) == is_due(shuffled, T, 60)


def _simulate(interval_s: float, phases: list[float], rng: random.Random, until_s: float) -> list[float]:
    """The instants the runs happen at: each replica ticks at its phase and then every
    ``next_delay``; a tick runs when ``is_due`` says so (runs take no time, so the lock never refuses)."""
    ticks = [(phase, replica) for replica, phase in enumerate(phases)]
    runs: list[float] = []
    while ticks:
        ticks.sort()
        at, replica = ticks.pop(0)
        if at > until_s:
            continue
        if is_due([run(r) for r in runs], T + timedelta(seconds=at), min_gap(interval_s)):
            runs.append(at)
        ticks.append((at + next_delay(interval_s, rng), replica))
    return runs


@given(st.floats(1, 3600), st.randoms())
def test_one_daemon_never_skips_its_own_cadence(interval_s: float, rng: random.Random) -> None:
    runs = _simulate(interval_s, [0.0], rng, until_s=30 * interval_s)
    assert len(runs) > 26  # every tick ran: 30 intervals hold at least 27 ticks of at most 1.1 intervals


@given(st.floats(1, 3600), st.lists(st.floats(0, 1), min_size=2, max_size=5), st.randoms())
def test_replicas_space_a_clouds_runs_about_one_interval_apart(
    interval_s: float, phases: list[float], rng: random.Random
) -> None:
    runs = _simulate(interval_s, [p * interval_s for p in phases], rng, until_s=30 * interval_s)
    gaps = [b - a for a, b in itertools.pairwise(runs)]
    assert min(gaps) >= min_gap(interval_s)
    # The replica that ran ticks again within (1 + JITTER) intervals, and then nothing stops it.
    assert max(gaps) <= interval_s * (1 + JITTER) * (1 + 1e-9)
    assert 30 / (1 + JITTER) - 1 <= len(runs) <= 30 / (1 - 2 * JITTER) + 1
