"""Rating: one resource's usage in a window priced by a price list, as lines of money. Pure.

The window is cut at every version's ``effective_from`` inside it, and each span is folded by
``tally.core.fact_pieces`` (the export's own fold), so a price change mid-month splits the usage at
its instant. A piece of presence is booked on a line per (project, state, SKU, span): the SKU
names the dimension priced (``instance.vcpu_hour``, ``instance.flavor.m1.small``,
``volume.gb_hour.ssd``). Then each line, on its own:

- its presence is rounded up to the version's ``granularity_seconds`` and raised to its
  ``minimum_seconds`` (the billed time), and its quantity scaled by billed / present time;
- the state's factor multiplies that quantity (the pricing quantity);
- cost = pricing quantity x unit price (the list price, times a volume type's modifier),
  rounded ROUND_HALF_UP to the currency's minor unit: the one rounding of a line, once.

A total is the sum of its lines' rounded costs, so it equals them to the cent by construction.
"""

from __future__ import annotations

import decimal
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache
from typing import Any

from tally.core import ResourceKey, UsageFact, UsageWindow, fact_pieces, format_instant, numeric_members

from ._dimensions import DIMENSIONS, Dimension
from ._price_list import PriceList, PriceVersion, TypeRules

_US_PER_HOUR = 3_600_000_000
_US_PER_S = 1_000_000
# Wide enough that a quotient is exact to far below any minor unit before the one rounding.
_CONTEXT = decimal.Context(prec=60, rounding=ROUND_HALF_UP)
QUANTITY_PLACES = Decimal("0.000000001")  # quantities are shown to the nanounit; costs use them exact


class RatingError(ValueError):
    """Usage the price list cannot place (no version in force, a type or flavor unpriced)."""


@dataclass(frozen=True, slots=True)
class RatedLine:
    """One priced line of one resource.

    Invariant: ``cost`` = (``pricing_quantity`` exact x ``unit_price``) rounded half-up to the
    currency's minor unit; ``billed_us`` >= ``presence_us`` > 0.
    """

    key: ResourceKey
    project_id: str
    state: str
    sku: str
    dimension: Dimension
    version_from: datetime
    charge_start: datetime
    charge_end: datetime
    presence_us: int
    billed_us: int
    consumed: Decimal  # units of ``dimension.unit`` used (exact, not rounded)
    factor: Decimal
    unit_price: Decimal
    pricing_quantity: Decimal  # consumed x billed/present x factor (exact to 60 digits)
    cost: Decimal


@dataclass(slots=True)
class _Acc:
    dimension: Dimension
    unit_price: Decimal
    version: PriceVersion
    start: datetime
    end: datetime
    presence_us: int = 0
    unit_us: Any = 0  # member-microseconds (int, or Decimal for a fractional member)


def spans(
    price_list: PriceList, window: UsageWindow, cuts: Sequence[datetime] = ()
) -> list[tuple[datetime, datetime, PriceVersion | None]]:
    """``[start, end)`` cut at each version's instant inside it (and at ``cuts``: where a project
    changes billing account), with the version in force on each span."""
    instants = {v.effective_from for v in price_list.versions} | set(cuts)
    bounds = [window.start, *sorted(t for t in instants if window.start < t < window.end), window.end]
    return [(lo, hi, price_list.version_at(lo)) for lo, hi in itertools.pairwise(bounds)]


def _where(key: ResourceKey) -> str:
    return f"{key.resource_type} {key.resource_id} of cloud {key.cloud}"


def _rules(key: ResourceKey, version: PriceVersion | None, at: datetime) -> TypeRules:
    if version is None:
        raise RatingError(f"{_where(key)}: no price version is in force at {format_instant(at)}")
    rules = version.types.get(key.resource_type)
    if rules is None:
        raise RatingError(
            f"{_where(key)}: the version from {format_instant(version.effective_from)} "
            f"prices no {key.resource_type}"
        )
    return rules


def _priced(
    key: ResourceKey, rules: TypeRules, size: Mapping[str, Any], version: PriceVersion
) -> list[tuple[str, Dimension, Decimal]]:
    """(SKU, dimension, unit price) of every dimension a piece of this size is billed on."""
    rtype, dims = key.resource_type, DIMENSIONS[key.resource_type]
    if rtype == "instance":
        flavor = size.get("flavor")
        if isinstance(flavor, str) and flavor in rules.flavors:
            return [(f"instance.flavor.{flavor}", dims["flavor"], rules.flavors[flavor])]
        if not rules.prices:
            raise RatingError(
                f"{_where(key)}: flavor {flavor!r} has no price in the version from "
                f"{format_instant(version.effective_from)}, which prices no vCPU, RAM or disk either"
            )
    out = []
    for name, price in rules.prices.items():
        sku = f"{rtype}.{name}"
        if rtype == "volume":
            vtype = size.get("type")
            if isinstance(vtype, str) and vtype:
                sku = f"{sku}.{vtype}"
                price = price * rules.type_modifiers.get(vtype, Decimal(1))
        out.append((sku, dims[name], price))
    return out


Priced = list[tuple[str, Dimension, Decimal]]


def _book(
    acc: dict[tuple[str, str, str, datetime], _Acc],
    piece: tuple[str, str, Mapping[str, Any], int, int, int],
    priced: Priced,
    version: PriceVersion,
    bounds: tuple[datetime, datetime],
) -> None:
    project, state, size, micros = piece[0], piece[1], piece[2], piece[3]
    numbers = numeric_members(size)
    for sku, dim, price in priced:
        amount: int | Decimal
        if dim.size is None:
            amount = micros
        elif dim.size in numbers:
            amount = numbers[dim.size] * micros
        else:
            continue  # a size without the member (an instance with no disk_gb): nothing to price
        slot = (project, state, sku, bounds[0])
        line = acc.get(slot)
        if line is None:
            line = acc[slot] = _Acc(dim, price, version, bounds[0], bounds[1])
        line.presence_us += micros
        line.unit_us += amount


def billed_us(presence_us: int, granularity_s: int, minimum_s: int) -> int:
    """Presence rounded up to whole granules, and at least the minimum (both in seconds)."""
    granule = granularity_s * _US_PER_S
    rounded = -(-presence_us // granule) * granule
    return max(rounded, minimum_s * _US_PER_S)


def line_cost(pricing_quantity: Decimal, unit_price: Decimal, minor_unit: int) -> Decimal:
    """The one rounding: ROUND_HALF_UP to the currency's minor unit."""
    exact = _CONTEXT.multiply(pricing_quantity, unit_price)
    return exact.quantize(Decimal(1).scaleb(-minor_unit), rounding=ROUND_HALF_UP, context=_CONTEXT)


def _finish(key: ResourceKey, slot: tuple[str, str, str, datetime], acc: _Acc, minor_unit: int) -> RatedLine:
    project, state, sku, _ = slot
    version, ctx = acc.version, _CONTEXT
    presence = acc.presence_us
    billed = billed_us(presence, version.granularity_seconds, version.minimum_seconds)
    consumed = ctx.divide(acc.unit_us, _US_PER_HOUR)
    factor = version.types[key.resource_type].factor(state, acc.dimension.name)
    # Most lines bill what they used, at factor 1: the quotient above is then the quantity.
    scaled = consumed if billed == presence else ctx.divide(ctx.multiply(consumed, billed), presence)
    quantity = scaled if factor == 1 else ctx.multiply(scaled, factor)
    return RatedLine(
        key=key,
        project_id=project,
        state=state,
        sku=sku,
        dimension=acc.dimension,
        version_from=version.effective_from,
        charge_start=acc.start,
        charge_end=acc.end,
        presence_us=acc.presence_us,
        billed_us=billed,
        consumed=consumed,
        factor=factor,
        unit_price=acc.unit_price,
        pricing_quantity=quantity,
        cost=line_cost(quantity, acc.unit_price, minor_unit),
    )


class Rater:
    """Rates resources by one price list, remembering what repeats across them: the spans of a
    window and the SKUs of a (version, type, flavor, volume type). One per export (or batch)."""

    def __init__(self, price_list: PriceList) -> None:
        self.price_list = price_list
        self._spans: dict[tuple[datetime, datetime, tuple[datetime, ...]], list[Any]] = {}
        self._priced: dict[tuple[int, str, Any, Any], Priced] = {}

    def _spans_of(self, window: UsageWindow, cuts: Sequence[datetime]) -> list[Any]:
        slot = (window.start, window.end, tuple(cuts))
        found = self._spans.get(slot)
        if found is None:
            found = self._spans[slot] = spans(self.price_list, window, cuts)
        return found

    def _priced_of(
        self, key: ResourceKey, version: PriceVersion, at: datetime, size: Mapping[str, Any]
    ) -> Priced:
        flavor, vtype = size.get("flavor"), size.get("type")
        memo = (
            id(version),
            key.resource_type,
            flavor if type(flavor) is str else None,
            vtype if type(vtype) is str else None,
        )
        found = self._priced.get(memo)
        if found is None:
            found = _priced(key, _rules(key, version, at), size, version)
            if len(self._priced) < 10_000:  # flavors and volume types are few; a hostile cloud is not
                self._priced[memo] = found
        return found

    def rate(
        self,
        key: ResourceKey,
        facts: Sequence[UsageFact],
        window: UsageWindow,
        *,
        project_id: str | None = None,
        cuts: Sequence[datetime] = (),
    ) -> list[RatedLine]:
        """The rated lines of one resource's history in ``window`` (of ``project_id`` when given),
        a line per span between version instants and ``cuts``."""
        acc: dict[tuple[str, str, str, datetime], _Acc] = {}
        for lo, hi, version in self._spans_of(window, cuts):
            if lo >= window.clip:
                break
            whole = lo == window.start and hi == window.end
            pieces, _ = fact_pieces(
                facts, window if whole else UsageWindow(lo, hi, window.upto, window.as_of)
            )
            for piece in pieces:
                if piece[3] == 0 or (project_id is not None and piece[0] != project_id):
                    continue
                if version is None:
                    _rules(key, None, lo)
                else:
                    _book(acc, piece, self._priced_of(key, version, lo, piece[2]), version, (lo, hi))
        minor = self.price_list.minor_unit
        if len(acc) == 1:
            [(slot, line)] = acc.items()
            return [_finish(key, slot, line, minor)]
        return [_finish(key, slot, line, minor) for slot, line in sorted(acc.items(), key=lambda i: i[0])]


def rate_facts(
    key: ResourceKey,
    facts: Sequence[UsageFact],
    window: UsageWindow,
    price_list: PriceList,
    *,
    project_id: str | None = None,
    cuts: Sequence[datetime] = (),
) -> list[RatedLine]:
    """``Rater(price_list).rate(...)`` of one resource: for a few; an export keeps one ``Rater``."""
    return Rater(price_list).rate(key, facts, window, project_id=project_id, cuts=cuts)


def add_totals(totals: dict[str, Decimal], lines: Iterable[RatedLine]) -> None:
    """Add each line's rounded cost to its project's total."""
    for line in lines:
        totals[line.project_id] = totals.get(line.project_id, Decimal(0)) + line.cost


def project_totals(lines: Iterable[RatedLine]) -> dict[str, Decimal]:
    """Cost per project: the sum of its lines' rounded costs."""
    totals: dict[str, Decimal] = {}
    add_totals(totals, lines)
    return dict(sorted(totals.items()))


@lru_cache(maxsize=4096)
def quantity_text(value: Decimal) -> str:
    """A quantity as the export writes it: to the nanounit, trailing zeros dropped. (Remembered: a
    month repeats a few quantities, a whole month's hours of each flavor size, over and over.)"""
    text = format(value.quantize(QUANTITY_PLACES, rounding=ROUND_HALF_UP, context=_CONTEXT), "f")
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text in ("", "-0") else text
