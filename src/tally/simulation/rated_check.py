"""The invoice checked: a rated export and its price list judged against the oracle. Pure.

The oracle's intervals are priced by the same rules the export was (``tally.rating``: the intervals
written as the events that fold into them, rated over the oracle's period by the price list), and
every line of every resource must match the export's: consumed quantity, pricing quantity and cost,
exactly. As for the usage check, a resource may differ only where the interval comparison tolerated
its differences. The month's cost per project is reported for both sides: the invoice the month
would send, and the one it should.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from tally.core import Interval, ResourceKey, UsageWindow
from tally.rating import PriceList, RatedAmounts, RatedLines, Rater, interval_facts, quantity_text
from tally.simulator.compare import Comparison
from tally.simulator.oracle import Oracle

from .usage_check import UsageCheck, UsageMismatch

Lines = dict[tuple[str, str, str, str], RatedAmounts]


@dataclass(frozen=True, slots=True)
class RatedCheck:
    """The per-resource verdicts, and the cost per project of the oracle and of the export."""

    check: UsageCheck
    oracle_totals: dict[str, Decimal]
    export_totals: dict[str, Decimal]

    def to_doc(self) -> dict[str, Any]:
        totals = {
            "oracle_totals": {p: str(v) for p, v in self.oracle_totals.items()},
            "export_totals": {p: str(v) for p, v in self.export_totals.items()},
        }
        return self.check.to_doc() | totals


def oracle_rated(oracle: Oracle, price_list: PriceList) -> RatedLines:
    """The oracle's month priced by ``price_list``: the lines its export should hold."""
    window = UsageWindow(oracle.period_from, oracle.period_to, oracle.period_to)
    rater = Rater(price_list)
    out: RatedLines = {}
    for r in oracle.resources:
        intervals = [Interval(i.start, i.end, i.state, i.size, i.project_id) for i in r.intervals]
        key = ResourceKey(oracle.cloud, r.resource_type, r.resource_id)
        lines = rater.rate(key, interval_facts(intervals), window)
        out[(oracle.cloud, r.resource_type, r.resource_id)] = {
            (ln.project_id, ln.state, ln.sku, ln.charge_start.strftime("%Y-%m-%dT%H:%M:%SZ")): RatedAmounts(
                Decimal(quantity_text(ln.consumed)), Decimal(quantity_text(ln.pricing_quantity)), ln.cost
            )
            for ln in lines
        }
    return out


def _first_difference(expected: Lines, exported: Lines) -> str | None:
    for key in sorted(expected.keys() | exported.keys()):
        line = f"project {key[0]} state {key[1]} {key[2]} from {key[3]}"
        o, e = expected.get(key), exported.get(key)
        if o is None or e is None:
            return f"{line}: only {'the export' if o is None else 'the oracle'} bills it"
        for name in ("consumed", "pricing", "cost"):
            if getattr(o, name) != getattr(e, name):
                return f"{line}: {name} oracle {getattr(o, name)}, export {getattr(e, name)}"
    return None


def _totals(lines: RatedLines) -> dict[str, Decimal]:
    totals: dict[str, Decimal] = {}
    for by_line in lines.values():
        for (project, *_), amounts in by_line.items():
            totals[project] = totals.get(project, Decimal(0)) + amounts.cost
    return dict(sorted(totals.items()))


def check_rated(
    oracle: Oracle, export: RatedLines, price_list: PriceList, comparison: Comparison
) -> RatedCheck:
    """Every resource of the oracle or of the export (in the oracle's cloud), judged as above."""
    expected = oracle_rated(oracle, price_list)
    exported = {ref: lines for ref, lines in export.items() if ref[0] == oracle.cloud}
    judged = {(r.resource_type, r.resource_id): r.tolerated for r in comparison.resources}
    exact = 0
    mismatches: list[UsageMismatch] = []
    for ref in sorted(expected.keys() | exported.keys()):
        detail = _first_difference(expected.get(ref, {}), exported.get(ref, {}))
        if detail is None:
            exact += 1
        else:
            mismatches.append(UsageMismatch(ref[1], ref[2], detail, judged.get((ref[1], ref[2]), False)))
    return RatedCheck(UsageCheck(exact, tuple(mismatches)), _totals(expected), _totals(exported))


def rated_summary(result: RatedCheck, *, limit: int = 10) -> list[str]:
    """The verdict in one line, the invoice per project (oracle and export), the resources off."""
    check = result.check
    lines = [
        f"rated export {'passed' if check.passed else 'FAILED'}: {check.exact} resources exact, "
        f"{check.tolerated} off where the comparison tolerated it, {check.off} off"
    ]
    for project in sorted(result.oracle_totals.keys() | result.export_totals.keys()):
        o, e = result.oracle_totals.get(project, Decimal(0)), result.export_totals.get(project, Decimal(0))
        lines.append(f"  invoice {project}: oracle {o} export {e}")
    off = [m for m in check.mismatches if not m.tolerated]
    lines += [f"  rated off: {m.resource_type} {m.resource_id}: {m.detail}" for m in off[:limit]]
    if len(off) > limit:
        lines.append(f"  ... and {len(off) - limit} more")
    return lines
