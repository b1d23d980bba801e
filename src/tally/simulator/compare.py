"""Compare: the oracle's intervals against the lifecycle intervals the store's events fold into. Pure.

For every resource the two piecewise functions of time (state, size, project, or
absent) are laid over each other inside the month; each span where they differ
is a :class:`Difference`. One kind is tolerated: a correction the sync dates at
its poll instant (an update, a delete found by absence) leaves the stored facts
stale from the instant the oracle changed until the next poll, so a span where
the store still shows facts the oracle held less than one sync interval before
the span ends is accepted and reported as such (two changes inside one interval
that no notification booked, a volume offered for transfer and accepted with the
accept lost, leave the store on the facts before both). Missing creates, wrong
sizes and anything longer are not.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from tally.core import Interval, StoredEvent, format_instant, lifecycle

from .oracle import Oracle

Facts = tuple[str, str, tuple[tuple[str, Any], ...]]
_TINY = timedelta(microseconds=1)


def _norm(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return value
    return Decimal(str(value)).normalize()


def _facts(state: str, project_id: str, size: Mapping[str, Any]) -> Facts:
    return (state, project_id, tuple(sorted((k, _norm(v)) for k, v in size.items())))


@dataclass(frozen=True, slots=True)
class Difference:
    """One span where the store disagrees with the oracle; ``fields`` names what differs."""

    start: datetime
    end: datetime
    fields: tuple[str, ...]
    expected: Facts | None
    stored: Facts | None
    tolerated: bool

    def to_doc(self) -> dict[str, Any]:
        def side(f: Facts | None) -> dict[str, Any] | None:
            if f is None:
                return None
            return {"state": f[0], "project_id": f[1], "size": {k: _plain(v) for k, v in f[2]}}

        return {
            "from": format_instant(self.start),
            "to": format_instant(self.end),
            "fields": list(self.fields),
            "oracle": side(self.expected),
            "stored": side(self.stored),
            "tolerated": self.tolerated,
            "note": "poll-dated correction within the sync interval" if self.tolerated else "",
        }


def _plain(v: Any) -> Any:
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    return v


@dataclass(frozen=True, slots=True)
class ResourceDiff:
    resource_type: str
    resource_id: str
    differences: tuple[Difference, ...]
    oracle_seconds: float
    stored_seconds: float

    @property
    def tolerated(self) -> bool:
        return all(d.tolerated for d in self.differences)


@dataclass(frozen=True)
class Comparison:
    """The result: resources that differ, billed resource-seconds by type, and the verdict."""

    resources: tuple[ResourceDiff, ...]
    exact: int
    oracle_seconds: Mapping[str, float]
    stored_seconds: Mapping[str, float]
    sync_interval: timedelta
    by_type_off: Mapping[str, float] = field(default_factory=dict)

    @property
    def off(self) -> int:
        return sum(1 for r in self.resources if not r.tolerated)

    @property
    def tolerated(self) -> int:
        return sum(1 for r in self.resources if r.tolerated)

    @property
    def seconds_off(self) -> float:
        return sum(self.stored_seconds.get(t, 0.0) - s for t, s in self.oracle_seconds.items()) + sum(
            s for t, s in self.stored_seconds.items() if t not in self.oracle_seconds
        )

    @property
    def passed(self) -> bool:
        return self.off == 0

    def to_doc(self) -> dict[str, Any]:
        types = sorted(set(self.oracle_seconds) | set(self.stored_seconds))
        return {
            "passed": self.passed,
            "exact": self.exact,
            "off": self.off,
            "tolerated": self.tolerated,
            "sync_interval_s": self.sync_interval.total_seconds(),
            "billed_seconds": {
                t: {
                    "oracle": self.oracle_seconds.get(t, 0.0),
                    "stored": self.stored_seconds.get(t, 0.0),
                    "off": self.stored_seconds.get(t, 0.0) - self.oracle_seconds.get(t, 0.0),
                }
                for t in types
            },
            "seconds_off": self.seconds_off,
            "resources": [
                {
                    "resource_type": r.resource_type,
                    "resource_id": r.resource_id,
                    "within_tolerance": r.tolerated,
                    "oracle_seconds": r.oracle_seconds,
                    "stored_seconds": r.stored_seconds,
                    "differences": [d.to_doc() for d in r.differences],
                }
                for r in self.resources
            ],
        }


Span = tuple[datetime, datetime, Facts]


def _fact_at(spans: Sequence[Span], at: datetime) -> Facts | None:
    for a, b, f in spans:
        if a <= at < b:
            return f
    return None


def _held(spans: Sequence[Span], facts: Facts, since: datetime, before: datetime) -> bool:
    """Whether the spans show ``facts`` somewhere before ``before`` in a span not ended before ``since``."""
    return any(f == facts and a < before and b >= since for a, b, f in spans)


def _diff(expected: Sequence[Span], stored: Sequence[Span], tolerance: timedelta) -> list[Difference]:
    points = sorted({p for a, b, _ in (*expected, *stored) for p in (a, b)})
    raw: list[tuple[datetime, datetime, Facts | None, Facts | None]] = []
    for a, b in itertools.pairwise(points):
        o, s = _fact_at(expected, a), _fact_at(stored, a)
        if o == s:
            continue
        if raw and raw[-1][1] == a and raw[-1][2] == o and raw[-1][3] == s:
            raw[-1] = (raw[-1][0], b, o, s)
        else:
            raw.append((a, b, o, s))
    out = []
    for a, b, o, s in raw:
        before = _fact_at(expected, a - _TINY)
        stale = s is not None and s != o and _held(expected, s, b - tolerance, a)
        # A sync.create dated at the platform's creation instant, ahead of the collector's own create.
        early = o is None and s is not None and before is None and _fact_at(expected, b) == s
        fields: tuple[str, ...]
        if o is None or s is None:
            fields = ("presence",)
        else:
            fields = tuple(n for n, x, y in zip(("state", "project", "size"), o, s, strict=True) if x != y)
        out.append(Difference(a, b, fields, o, s, (stale or early) and b - a <= tolerance))
    return out


def _seconds(spans: Iterable[Span]) -> float:
    return sum((b - a).total_seconds() for a, b, _ in spans)


def stored_intervals(
    events: Iterable[StoredEvent], *, cloud: str
) -> dict[tuple[str, str], tuple[Interval, ...]]:
    """Group a cloud's stored events by resource and fold each into its lifecycle intervals."""
    by_key: dict[tuple[str, str], list[StoredEvent]] = defaultdict(list)
    for stored in events:
        if stored.event.cloud == cloud:
            by_key[(stored.event.resource_type, stored.event.resource_id)].append(stored)
    return {key: lifecycle(evs).intervals for key, evs in by_key.items()}


def compare(
    oracle: Oracle,
    stored: Mapping[tuple[str, str], Sequence[Interval]],
    *,
    sync_interval: timedelta,
) -> Comparison:
    """Every resource of the oracle or the store, inside the oracle's period."""
    lo, hi = oracle.period_from, oracle.period_to
    expected: dict[tuple[str, str], list[Span]] = {
        (r.resource_type, r.resource_id): [
            (i.start, i.end, _facts(i.state, i.project_id, i.size)) for i in r.intervals
        ]
        for r in oracle.resources
    }
    seen: dict[tuple[str, str], list[Span]] = {}
    for key, intervals in stored.items():
        spans = []
        for i in intervals:
            a, b = max(i.start, lo), hi if i.end is None else min(i.end, hi)
            if b > a:
                spans.append((a, b, _facts(i.state, i.project_id, i.size)))
        seen[key] = spans
    oracle_s: dict[str, float] = defaultdict(float)
    stored_s: dict[str, float] = defaultdict(float)
    diffs = []
    exact = 0
    for key in sorted(set(expected) | {k for k, v in seen.items() if v}):
        o, s = expected.get(key, []), seen.get(key, [])
        oracle_s[key[0]] += _seconds(o)
        stored_s[key[0]] += _seconds(s)
        found = _diff(o, s, sync_interval)
        if found:
            diffs.append(ResourceDiff(key[0], key[1], tuple(found), _seconds(o), _seconds(s)))
        else:
            exact += 1
    return Comparison(tuple(diffs), exact, dict(oracle_s), dict(stored_s), sync_interval)
