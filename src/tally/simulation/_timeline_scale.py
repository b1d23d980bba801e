"""The time axis of a report timeline: one resource's own life, with its differing spans widened.

A month drawn to scale made a difference of seconds to minutes a band of a pixel or two, and drew
every resource over the whole month whatever its life. ``PiecewiseScale`` maps the resource's life
onto the width in segments cut at every boundary (an interval's start or end, a difference's start
or end): each segment is as wide as its share of the time, except that a differing segment is never
narrower than ``min_diff_px`` and no segment narrower than ``min_px``. The axis is therefore not
linear, and the report says so; within one segment it is.

``label_positions`` keeps the axis labels apart: a label is drawn only where it does not overlap the
one before it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise

MIN_DIFF_PX = 36.0
MIN_PX = 3.0


def segment_widths(durations: Sequence[float], minimums: Sequence[float], width: float) -> list[float]:
    """Widths summing to ``width``: proportional to ``durations``, none below its minimum.

    The segments held at their minimum are found by fixed point: after each pass, every segment
    whose proportional width falls below its minimum is pinned there and the rest share what is
    left. When even the minimums do not fit, they are scaled down together.
    """
    if not durations:
        return []
    floor_total = sum(minimums)
    if floor_total >= width:
        if floor_total == 0:
            return [width / len(durations)] * len(durations)
        return [width * m / floor_total for m in minimums]
    pinned: set[int] = set()
    while True:
        free = width - sum(minimums[i] for i in pinned)
        time_left = sum(d for i, d in enumerate(durations) if i not in pinned)
        if time_left <= 0:
            share = free / max(1, len(durations) - len(pinned))
            return [minimums[i] if i in pinned else share for i in range(len(durations))]
        widths = [minimums[i] if i in pinned else free * d / time_left for i, d in enumerate(durations)]
        newly = {i for i, w in enumerate(widths) if i not in pinned and w < minimums[i]}
        if not newly:
            return widths
        pinned |= newly


@dataclass(frozen=True)
class PiecewiseScale:
    """Instants to x: ``breaks`` ascending, ``xs`` the x of each break (``xs[0] == left``)."""

    breaks: tuple[datetime, ...]
    xs: tuple[float, ...]

    @classmethod
    def build(
        cls,
        boundaries: Iterable[datetime],
        differing: Iterable[tuple[datetime, datetime]],
        *,
        left: float,
        width: float,
        min_diff_px: float = MIN_DIFF_PX,
        min_px: float = MIN_PX,
    ) -> PiecewiseScale:
        spans = [(a, b) for a, b in differing if b > a]
        breaks = sorted(set(boundaries) | {t for span in spans for t in span})
        if len(breaks) < 2:
            only = breaks[0] if breaks else datetime.min
            return cls((only, only), (left, left + width))
        durations, minimums = [], []
        for a, b in pairwise(breaks):
            durations.append((b - a).total_seconds())
            inside = any(s <= a and b <= e for s, e in spans)
            minimums.append(min_diff_px if inside else min_px)
        xs = [left]
        for w in segment_widths(durations, minimums, width):
            xs.append(xs[-1] + w)
        return cls(tuple(breaks), tuple(xs))

    @property
    def lo(self) -> datetime:
        return self.breaks[0]

    @property
    def hi(self) -> datetime:
        return self.breaks[-1]

    def x(self, at: datetime) -> float:
        if at <= self.breaks[0]:
            return self.xs[0]
        if at >= self.breaks[-1]:
            return self.xs[-1]
        i = bisect_right(self.breaks, at) - 1
        a, b = self.breaks[i], self.breaks[i + 1]
        share = (at - a).total_seconds() / max((b - a).total_seconds(), 1e-9)
        return self.xs[i] + (self.xs[i + 1] - self.xs[i]) * share


def label_positions(xs: Sequence[float], *, label_px: float) -> list[int]:
    """Indexes of ``xs`` (ascending) to label so that no two labels ``label_px`` wide overlap; the
    first and the last are preferred."""
    if not xs:
        return []
    kept = [0]
    for i in range(1, len(xs)):
        if xs[i] - xs[kept[-1]] >= label_px:
            kept.append(i)
    last = len(xs) - 1
    if kept[-1] != last and len(kept) > 1 and xs[last] - xs[kept[-2]] >= label_px:
        kept[-1] = last
    return kept
