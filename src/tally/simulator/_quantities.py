"""The quantity-weighted error of a comparison: what a bill would be off by, per type and size member.

Resource-seconds count presence only, so a month with a wrong flavor scores 0 there. Here every
span is weighted by what it bills: vCPU-hours, RAM GB-hours and disk GB-hours per flavor, GB-hours
per volume type, image GB-hours, floating-IP hours and load-balancer hours. For each line the
oracle's and the store's totals, the signed error (stored minus oracle) and the absolute error
(the integral of the difference's magnitude, so a day billed as m1.medium instead of m1.small
shows on both flavors' lines even where the totals happen to cancel). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

# (resource type, size member value or "", unit)
QuantityKey = tuple[str, str, str]

_INSTANCE_UNITS = (("vcpus", "vcpu_h"), ("ram_gb", "ram_gb_h"), ("disk_gb", "disk_gb_h"))


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return 0.0
    return float(value)


def quantities_of(resource_type: str, size: Mapping[str, Any]) -> dict[QuantityKey, float]:
    """What one hour of a resource with this size bills, by line."""
    if resource_type == "instance":
        flavor = str(size.get("flavor", ""))
        return {(resource_type, flavor, unit): _number(size.get(member)) for member, unit in _INSTANCE_UNITS}
    if resource_type == "volume":
        return {(resource_type, str(size.get("type", "")), "gb_h"): _number(size.get("size_gb"))}
    if resource_type == "image":
        return {(resource_type, "", "gb_h"): _number(size.get("size_gb"))}
    return {(resource_type, "", "hours"): 1.0}


@dataclass(slots=True)
class QuantityLine:
    """One line's totals in its unit (hours times the quantity)."""

    oracle: float = 0.0
    stored: float = 0.0
    absolute: float = 0.0

    @property
    def signed(self) -> float:
        return self.stored - self.oracle


def add_span(
    lines: dict[QuantityKey, QuantityLine],
    resource_type: str,
    hours: float,
    expected: Mapping[str, Any] | None,
    stored: Mapping[str, Any] | None,
) -> None:
    """Account ``hours`` of one resource where the oracle bills ``expected`` and the store ``stored``
    (None: absent on that side)."""
    o = quantities_of(resource_type, expected) if expected is not None else {}
    s = quantities_of(resource_type, stored) if stored is not None else {}
    for key in o.keys() | s.keys():
        line = lines.setdefault(key, QuantityLine())
        qo, qs = o.get(key, 0.0) * hours, s.get(key, 0.0) * hours
        line.oracle += qo
        line.stored += qs
        line.absolute += abs(qs - qo)


def lines_doc(lines: Mapping[QuantityKey, QuantityLine]) -> list[dict[str, Any]]:
    return [
        {
            "resource_type": t,
            "member": m,
            "unit": u,
            "oracle": round(line.oracle, 6),
            "stored": round(line.stored, 6),
            "signed": round(line.signed, 6),
            "absolute": round(line.absolute, 6),
        }
        for (t, m, u), line in sorted(lines.items())
    ]
