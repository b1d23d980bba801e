"""The report timeline's axis: the resource's own life, differing spans widened, labels apart."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tally.simulation._timeline_scale import PiecewiseScale, label_positions, segment_widths

T0 = datetime(2026, 7, 1, tzinfo=UTC)


@given(
    st.lists(st.floats(min_value=0, max_value=3e6), min_size=1, max_size=30),
    st.data(),
)
def test_widths_fill_the_width_and_respect_each_minimum_when_they_fit(
    durations: list[float], data: st.DataObject
) -> None:
    minimums = data.draw(
        st.lists(st.sampled_from([0.0, 3.0, 36.0]), min_size=len(durations), max_size=len(durations))
    )
    width = 880.0
    widths = segment_widths(durations, minimums, width)
    assert sum(widths) == pytest.approx(width)
    if sum(minimums) < width:
        assert all(w >= m - 1e-6 for w, m in zip(widths, minimums, strict=True))
    # Longer free segments are never drawn narrower than shorter ones.
    free = [(d, w) for d, w, m in zip(durations, widths, minimums, strict=True) if w > m + 1e-6]
    for (d1, w1), (d2, w2) in zip(sorted(free), sorted(free)[1:], strict=False):
        assert w1 <= w2 + 1e-6 or d1 == d2


instants = st.integers(min_value=0, max_value=31 * 86400).map(lambda s: T0 + timedelta(seconds=s))


@given(st.lists(instants, min_size=2, max_size=20), st.lists(st.tuples(instants, instants), max_size=5))
def test_the_scale_is_monotonic_and_widens_every_differing_span(
    boundaries: list[datetime], spans: list[tuple[datetime, datetime]]
) -> None:
    differing = [(min(a, b), max(a, b)) for a, b in spans]
    scale = PiecewiseScale.build(boundaries, differing, left=70, width=880, min_diff_px=36, min_px=3)
    assert scale.xs[0] == 70 and scale.xs[-1] == pytest.approx(950)
    assert list(scale.xs) == sorted(scale.xs)
    samples = sorted(set(boundaries) | {t for s in differing for t in s})
    xs = [scale.x(t) for t in samples]
    assert xs == sorted(xs)
    segments = len(scale.breaks) - 1
    if segments * 36 <= 880:
        for start, end in differing:
            if end > start:
                assert scale.x(end) - scale.x(start) >= 36 - 1e-6


def test_forty_seconds_in_a_month_are_seen() -> None:
    life = [T0, T0 + timedelta(days=30)]
    diff = (T0 + timedelta(days=12), T0 + timedelta(days=12, seconds=40))
    scale = PiecewiseScale.build(life, [diff], left=0, width=900)
    assert scale.x(diff[1]) - scale.x(diff[0]) >= 36
    assert scale.lo == T0 and scale.hi == T0 + timedelta(days=30)


@given(st.lists(st.floats(min_value=0, max_value=1000), min_size=1, max_size=50))
def test_kept_labels_never_overlap(raw: list[float]) -> None:
    xs = sorted(raw)
    kept = label_positions(xs, label_px=100)
    assert kept[0] == 0
    assert all(xs[b] - xs[a] >= 100 for a, b in itertools.pairwise(kept))
