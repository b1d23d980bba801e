"""Compare: the oracle's intervals against the lifecycle intervals the store's events fold into. Pure.

For every resource the two piecewise functions of time (state, size, project, or absent) are laid
over each other inside the month; each span where they differ is a :class:`Difference`, and
:mod:`._verdict` decides whether the seeds accept it (a correction dated at its poll by the first
run that could book it, read from the store's sync runs) or not. Beside the verdicts: billed
resource-seconds per type and the quantity-weighted error per type and size member
(:mod:`._quantities`).
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from functools import cached_property
from typing import Any

from tally.core import Interval, StoredEvent, format_instant, lifecycle, sorted_events

from ._quantities import QuantityKey, QuantityLine, add_span, lines_doc
from ._runs import SyncRun
from ._verdict import LOST_UPDATE, Context, Facts, Judgement, Span, differing_fields, fact_at, judge
from .oracle import Oracle

Key = tuple[str, str]


def _norm(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return value
    return Decimal(str(value)).normalize()


def _facts(state: str, project_id: str, size: Mapping[str, Any]) -> Facts:
    return (state, project_id, tuple(sorted((k, _norm(v)) for k, v in size.items())))


def _plain(v: Any) -> Any:
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    return v


def _size(f: Facts | None) -> dict[str, Any] | None:
    return None if f is None else {k: _plain(v) for k, v in f[2]}


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """What the compare reads of a store: each resource's events, and the cloud's sync runs."""

    histories: Mapping[Key, tuple[StoredEvent, ...]]
    runs: tuple[SyncRun, ...] = ()

    def intervals(self) -> dict[Key, tuple[Interval, ...]]:
        return {key: lifecycle(events).intervals for key, events in self.histories.items()}


def stored_record(events: Iterable[StoredEvent], *, cloud: str, runs: Sequence[SyncRun] = ()) -> StoredRecord:
    """Group a cloud's stored events by resource, in fold order."""
    by_key: dict[Key, list[StoredEvent]] = defaultdict(list)
    for stored in events:
        if stored.event.cloud == cloud:
            by_key[(stored.event.resource_type, stored.event.resource_id)].append(stored)
    histories = {key: tuple(sorted_events(evs)) for key, evs in by_key.items()}
    return StoredRecord(histories, tuple(sorted(runs, key=lambda r: r.started_at)))


@dataclass(frozen=True, slots=True)
class Difference:
    """One span where the store disagrees with the oracle, and the verdict on it."""

    start: datetime
    end: datetime
    fields: tuple[str, ...]
    expected: Facts | None
    stored: Facts | None
    judgement: Judgement

    @property
    def tolerated(self) -> bool:
        return self.judgement.tolerated

    @property
    def cause(self) -> str:
        return self.judgement.cause

    def note(self) -> str:
        """One line: the verdict, its cause, and the correction and run it rests on."""
        j = self.judgement
        parts = [("tolerated: " if j.tolerated else "off: ") + j.cause]
        if j.correction_id:
            parts.append(f"correction {j.correction_id}")
        if j.run_id:
            parts.append(f"run {j.run_id}")
        if j.due_run_id and j.due_run_id != j.run_id:
            parts.append(f"first run that could book it {j.due_run_id}")
        return "; ".join(parts)

    def to_doc(self) -> dict[str, Any]:
        def side(f: Facts | None) -> dict[str, Any] | None:
            return None if f is None else {"state": f[0], "project_id": f[1], "size": _size(f)}

        j = self.judgement
        return {
            "from": format_instant(self.start),
            "to": format_instant(self.end),
            "fields": list(self.fields),
            "oracle": side(self.expected),
            "stored": side(self.stored),
            "verdict": "tolerated" if j.tolerated else "off",
            "tolerated": j.tolerated,
            "cause": j.cause,
            "correction_event_id": j.correction_id,
            "sync_run_id": j.run_id,
            "first_run_that_could_book": j.due_run_id,
        }


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

    @property
    def causes(self) -> tuple[str, ...]:
        """The off causes, or the tolerated ones when nothing is off."""
        off = [d.cause for d in self.differences if not d.tolerated]
        return tuple(dict.fromkeys(off or [d.cause for d in self.differences]))


@dataclass(frozen=True)
class Comparison:
    """The result: resources that differ with their verdicts, billed resource-seconds and quantities
    by type, and the verdict of the whole."""

    resources: tuple[ResourceDiff, ...]
    exact: int
    oracle_seconds: Mapping[str, float]
    stored_seconds: Mapping[str, float]
    settle: timedelta
    runs: int
    quantities: Mapping[QuantityKey, QuantityLine] = field(default_factory=dict)

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

    @cached_property
    def off_by_cause(self) -> dict[str, int]:
        """Resources off, counted once per cause they show."""
        counts: Counter[str] = Counter()
        for r in self.resources:
            if not r.tolerated:
                counts.update(r.causes)
        return dict(sorted(counts.items()))

    @cached_property
    def tolerated_by_cause(self) -> dict[str, int]:
        counts: Counter[str] = Counter(d.cause for r in self.resources for d in r.differences if d.tolerated)
        return dict(sorted(counts.items()))

    def to_doc(self) -> dict[str, Any]:
        types = sorted(set(self.oracle_seconds) | set(self.stored_seconds))
        return {
            "passed": self.passed,
            "exact": self.exact,
            "off": self.off,
            "tolerated": self.tolerated,
            "off_by_cause": self.off_by_cause,
            "tolerated_by_cause": self.tolerated_by_cause,
            "settle_s": self.settle.total_seconds(),
            "sync_runs": self.runs,
            "billed_seconds": {
                t: {
                    "oracle": self.oracle_seconds.get(t, 0.0),
                    "stored": self.stored_seconds.get(t, 0.0),
                    "off": self.stored_seconds.get(t, 0.0) - self.oracle_seconds.get(t, 0.0),
                }
                for t in types
            },
            "seconds_off": self.seconds_off,
            "quantities": lines_doc(self.quantities),
            "resources": [
                {
                    "resource_type": r.resource_type,
                    "resource_id": r.resource_id,
                    "within_tolerance": r.tolerated,
                    "causes": list(r.causes),
                    "oracle_seconds": r.oracle_seconds,
                    "stored_seconds": r.stored_seconds,
                    "differences": [d.to_doc() for d in r.differences],
                }
                for r in self.resources
            ],
        }


def _seconds(spans: Iterable[Span]) -> float:
    return sum((b - a).total_seconds() for a, b, _ in spans)


def _clipped(intervals: Sequence[Interval], lo: datetime, hi: datetime) -> list[Span]:
    spans = []
    for i in intervals:
        a, b = max(i.start, lo), hi if i.end is None else min(i.end, hi)
        if b > a:
            spans.append((a, b, _facts(i.state, i.project_id, i.size)))
    return spans


def compare(
    oracle: Oracle,
    record: StoredRecord,
    *,
    settle: timedelta,
    platform_created: Mapping[Key, datetime] | None = None,
) -> Comparison:
    """Every resource of the oracle or the store, inside the oracle's period.

    ``settle`` is the settle window the runs were told (``TALLY_REPORTING_SYNC_SETTLE_S``);
    ``platform_created`` the creation instants the platform reports, where known: a ``sync.create``
    dated there is accepted ahead of the oracle's start.
    """
    lo, hi = oracle.period_from, oracle.period_to
    expected: dict[Key, list[Span]] = {
        (r.resource_type, r.resource_id): [
            (i.start, i.end, _facts(i.state, i.project_id, i.size)) for i in r.intervals
        ]
        for r in oracle.resources
    }
    seen = {key: _clipped(intervals, lo, hi) for key, intervals in record.intervals().items()}
    ctx = Context(
        runs=record.runs,
        runs_by_id={r.run_id: r for r in record.runs},
        settle=settle,
        platform_created=platform_created or {},
        period_to=hi,
        lost_updates=frozenset(
            (r.resource_type, r.resource_id) for r in oracle.resources if LOST_UPDATE in r.faults
        ),
    )
    oracle_s: dict[str, float] = defaultdict(float)
    stored_s: dict[str, float] = defaultdict(float)
    lines: dict[QuantityKey, QuantityLine] = {}
    diffs = []
    exact = 0
    for key in sorted(set(expected) | {k for k, v in seen.items() if v}):
        o, s = expected.get(key, []), seen.get(key, [])
        oracle_s[key[0]] += _seconds(o)
        stored_s[key[0]] += _seconds(s)
        found = _differences(key, o, s, record.histories.get(key, ()), ctx, lines)
        if found:
            diffs.append(ResourceDiff(key[0], key[1], tuple(found), _seconds(o), _seconds(s)))
        else:
            exact += 1
    return Comparison(tuple(diffs), exact, dict(oracle_s), dict(stored_s), settle, len(record.runs), lines)


def _differences(
    key: Key,
    expected: Sequence[Span],
    stored: Sequence[Span],
    history: Sequence[StoredEvent],
    ctx: Context,
    lines: dict[QuantityKey, QuantityLine],
) -> list[Difference]:
    points = sorted({p for a, b, _ in (*expected, *stored) for p in (a, b)})
    raw: list[tuple[datetime, datetime, Facts | None, Facts | None]] = []
    for a, b in itertools.pairwise(points):
        o, s = fact_at(expected, a), fact_at(stored, a)
        add_span(lines, key[0], (b - a).total_seconds() / 3600, _size(o), _size(s))
        if o == s:
            continue
        if raw and raw[-1][1] == a and raw[-1][2] == o and raw[-1][3] == s:
            raw[-1] = (raw[-1][0], b, o, s)
        else:
            raw.append((a, b, o, s))
    return [
        Difference(a, b, differing_fields(o, s), o, s, judge(key, a, b, o, s, expected, stored, history, ctx))
        for a, b, o, s in raw
    ]
