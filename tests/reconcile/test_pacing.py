"""Pacing many clouds: the stagger of the first scheduled runs and the default cap (pure functions)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tally.reconcile._pacing import max_concurrent
from tally.reconcile.internals import default_max_concurrent, first_delay, stagger_offset

names = st.text(alphabet="abcdefghij-0123456789", min_size=1, max_size=12)
configs = st.dictionaries(names, st.integers(min_value=0, max_value=86400 * 7), min_size=1, max_size=60)


def test_fifty_clouds_of_one_interval_are_spread_evenly_by_name() -> None:
    intervals = {f"os-{i:02d}": 600 for i in range(50)}
    offsets = [stagger_offset(c, intervals) for c in sorted(intervals)]
    assert offsets[0] == 0.0
    assert offsets == [600 * i / 50 for i in range(50)]  # 12 s apart, the last 588 s after start


def test_clouds_synced_only_on_request_take_no_place_in_the_stagger() -> None:
    intervals = {"a": 0, "b": 600, "c": 600, "d": 0}
    assert stagger_offset("a", intervals) == 0.0
    assert (stagger_offset("b", intervals), stagger_offset("c", intervals)) == (0.0, 300.0)
    assert first_delay("d", intervals, random.Random(1)) == 0.0


def test_an_unconfigured_cloud_is_refused() -> None:
    with pytest.raises(KeyError):
        stagger_offset("os-nowhere", {"os-a": 600})


@given(configs, st.randoms(use_true_random=False))
def test_every_first_run_falls_inside_the_first_interval_in_name_order(
    intervals: dict[str, int], rng: random.Random
) -> None:
    delays = {c: first_delay(c, intervals, rng) for c in intervals}
    scheduled = sorted(c for c, s in intervals.items() if s > 0)
    for rank, cloud in enumerate(scheduled):
        interval = intervals[cloud]
        slot = interval / len(scheduled)
        assert 0 <= delays[cloud] < interval
        # The jitter moves a run by at most a tenth of its slot: clouds never trade places.
        assert abs(delays[cloud] - rank * slot) <= 0.1 * slot + 1e-9
    if scheduled:
        assert delays[scheduled[0]] == 0.0  # the first by name syncs at once


@given(configs, st.permutations(range(60)))
def test_the_offset_does_not_depend_on_the_order_of_the_config(
    intervals: dict[str, int], order: list[int]
) -> None:
    clouds = list(intervals)
    shuffled = {clouds[i]: intervals[clouds[i]] for i in order if i < len(clouds)}
    assert {c: stagger_offset(c, shuffled) for c in clouds} == {
        c: stagger_offset(c, intervals) for c in clouds
    }


def test_the_default_cap_is_half_the_pool_bounded_by_the_clouds() -> None:
    assert default_max_concurrent(10, 50) == 5
    assert default_max_concurrent(10, 2) == 2
    assert default_max_concurrent(1, 50) == 1  # a pool of one still syncs, one cloud at a time
    assert default_max_concurrent(10, 0) == 1
    with pytest.raises(ValueError, match="a pool of 0 connections"):
        default_max_concurrent(0, 5)


def test_a_set_cap_wins_over_the_default() -> None:
    assert max_concurrent(0, 20, 50) == 10
    assert max_concurrent(3, 20, 50) == 3
    with pytest.raises(ValueError, match="TALLY_REPORTING_SYNC_MAX_CONCURRENT=-1"):
        max_concurrent(-1, 20, 50)
