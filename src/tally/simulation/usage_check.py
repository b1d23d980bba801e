"""The billing path checked: a usage export read back against the oracle's per-resource usage. Pure.

The oracle's intervals are metered by the same clipping the export uses (``tally.core.interval_usage``)
over the oracle's period; the export is what a billing engine reads (``tally.usage.read_export``).
Per resource, every (project, state) line's presence and quantity seconds must be equal, exactly.
A resource may differ only where the interval comparison tolerated its differences (a correction
the seeds date at a run's poll): the export then carries the same tolerated error, and nothing else.
A resource the comparison found exact but the export gets wrong is a fault of the export path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from tally.core import Interval, UsageLine, UsageWindow, interval_usage
from tally.simulator.compare import Comparison
from tally.simulator.oracle import Oracle, OracleResource
from tally.usage import ExportedLine, ExportedUsage

_MICRO = Decimal(1_000_000)
Lines = dict[tuple[str, str], ExportedLine]


@dataclass(frozen=True, slots=True)
class UsageMismatch:
    resource_type: str
    resource_id: str
    detail: str
    tolerated: bool

    def to_doc(self) -> dict[str, Any]:
        return {
            "resource_type": self.resource_type,
            "resource_id": self.resource_id,
            "detail": self.detail,
            "tolerated": self.tolerated,
        }


@dataclass(frozen=True, slots=True)
class UsageCheck:
    exact: int
    mismatches: tuple[UsageMismatch, ...]

    @property
    def off(self) -> int:
        return sum(1 for m in self.mismatches if not m.tolerated)

    @property
    def tolerated(self) -> int:
        return sum(1 for m in self.mismatches if m.tolerated)

    @property
    def passed(self) -> bool:
        return self.off == 0

    def to_doc(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "exact": self.exact,
            "tolerated": self.tolerated,
            "off": self.off,
            "mismatches": [m.to_doc() for m in self.mismatches],
        }


def _seconds(line: UsageLine) -> ExportedLine:
    return ExportedLine(
        Decimal(line.presence_us) / _MICRO, {m: v / _MICRO for m, v in line.quantities.items()}
    )


def oracle_lines(oracle: Oracle, resource: OracleResource) -> Lines:
    window = UsageWindow(oracle.period_from, oracle.period_to, oracle.period_to)
    intervals = [Interval(i.start, i.end, i.state, i.size, i.project_id) for i in resource.intervals]
    return {k: _seconds(v) for k, v in interval_usage(intervals, window).items()}


def _text(value: Decimal | None) -> str:
    return "none" if value is None else format(value.normalize(), "f")


def _present(lines: Mapping[tuple[str, str], ExportedLine]) -> Lines:
    return {k: v for k, v in lines.items() if v.presence_s}


def first_difference(expected: Lines, exported: Lines, members: frozenset[str]) -> str | None:
    """The first way two resources' lines differ, in words; None when they are equal."""
    expected, exported = _present(expected), _present(exported)
    for key in sorted(expected.keys() | exported.keys()):
        line = f"project {key[0]} state {key[1]}"
        o, e = expected.get(key), exported.get(key)
        if o is None or e is None:
            return f"{line}: only {'the export' if o is None else 'the oracle'} has usage"
        if o.presence_s != e.presence_s:
            return f"{line}: presence oracle {_text(o.presence_s)} s, export {_text(e.presence_s)} s"
        for member in sorted((o.quantities_s.keys() & members) | e.quantities_s.keys()):
            qo, qe = o.quantities_s.get(member), e.quantities_s.get(member)
            if qo != qe:
                return f"{line}: {member} oracle {_text(qo)} s, export {_text(qe)} s"
    return None


def check_usage(oracle: Oracle, export: ExportedUsage, comparison: Comparison) -> UsageCheck:
    """Every resource of the oracle or of the export (in the oracle's cloud), judged as above."""
    expected = {(r.resource_type, r.resource_id): oracle_lines(oracle, r) for r in oracle.resources}
    exported = {
        (rtype, rid): lines for (cloud, rtype, rid), lines in export.lines.items() if cloud == oracle.cloud
    }
    judged = {(r.resource_type, r.resource_id): r.tolerated for r in comparison.resources}
    exact = 0
    mismatches: list[UsageMismatch] = []
    for key in sorted(expected.keys() | exported.keys()):
        detail = first_difference(expected.get(key, {}), exported.get(key, {}), export.members)
        if detail is None:
            exact += 1
        else:
            mismatches.append(UsageMismatch(key[0], key[1], detail, judged.get(key, False)))
    return UsageCheck(exact, tuple(mismatches))


def summary_lines(check: UsageCheck, *, limit: int = 10) -> list[str]:
    """The verdict in one line, then up to ``limit`` resources the export is off for."""
    verdict = "passed" if check.passed else "FAILED"
    lines = [
        f"usage export {verdict}: {check.exact} resources exact, {check.tolerated} off where the comparison "
        f"tolerated it, {check.off} off"
    ]
    off = [m for m in check.mismatches if not m.tolerated]
    lines += [f"  export off: {m.resource_type} {m.resource_id}: {m.detail}" for m in off[:limit]]
    if len(off) > limit:
        lines.append(f"  ... and {len(off) - limit} more")
    return lines
