"""The rated export's encodings: CSV lines and JSON items, every amount a decimal text.

One line per resource, project, state, SKU and price version: the usage it rates (presence and
billed seconds, the consumed quantity in its unit), the rule applied (state factor, unit price)
and the money (pricing quantity, cost). Quantities are written to the nanounit; a cost is exact
to the currency's minor unit, and the per-project totals of the JSON are the sums of its lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from functools import lru_cache
from typing import Any

from tally.core import ResourceKey, format_instant, parse_instant, seconds_text

from ._dimensions import DIMENSIONS
from ._price_list import PriceList
from ._rate import RatedLine, quantity_text

_US = 1_000_000
RATED_COLUMNS = (
    "cloud",
    "resource_type",
    "resource_id",
    "project_id",
    "state",
    "sku",
    "charge_start",
    "charge_end",
    "presence_s",
    "billed_s",
    "consumed_quantity",
    "consumed_unit",
    "factor",
    "pricing_quantity",
    "unit_price",
    "cost",
    "currency",
    "price_list",
    "version_from",
)


# A month's lines share a handful of instants (the window and the versions' bounds): each is
# formatted once.
_instant = lru_cache(maxsize=1024)(format_instant)


def rated_cells(line: RatedLine, price_list: PriceList) -> list[str]:
    key = line.key
    presence = seconds_text(line.presence_us)
    consumed = quantity_text(line.consumed)
    return [
        key.cloud,
        key.resource_type,
        key.resource_id,
        line.project_id,
        line.state,
        line.sku,
        _instant(line.charge_start),
        _instant(line.charge_end),
        presence,
        presence if line.billed_us == line.presence_us else seconds_text(line.billed_us),
        consumed,
        line.dimension.unit,
        str(line.factor),
        consumed if line.pricing_quantity is line.consumed else quantity_text(line.pricing_quantity),
        str(line.unit_price),
        str(line.cost),
        price_list.currency,
        price_list.name,
        _instant(line.version_from),
    ]


def rated_json(line: RatedLine, price_list: PriceList) -> dict[str, str]:
    return dict(zip(RATED_COLUMNS, rated_cells(line, price_list), strict=True))


def totals_json(totals: Mapping[str, Decimal]) -> dict[str, str]:
    return {project: str(cost) for project, cost in totals.items()}


def rated_head(price_list: PriceList) -> dict[str, Any]:
    return {"price_list": price_list.name, "currency": price_list.currency}


def rated_line_of(doc: Mapping[str, str]) -> RatedLine:
    """A rated line back from its JSON (a frozen or correction line of a closed period)."""
    rtype, dimension = doc["resource_type"], doc["sku"].split(".")[1]
    return RatedLine(
        key=ResourceKey(doc["cloud"], rtype, doc["resource_id"]),
        project_id=doc["project_id"],
        state=doc["state"],
        sku=doc["sku"],
        dimension=DIMENSIONS[rtype][dimension],
        version_from=parse_instant(doc["version_from"]),
        charge_start=parse_instant(doc["charge_start"]),
        charge_end=parse_instant(doc["charge_end"]),
        presence_us=int(Decimal(doc["presence_s"]) * _US),
        billed_us=int(Decimal(doc["billed_s"]) * _US),
        consumed=Decimal(doc["consumed_quantity"]),
        factor=Decimal(doc["factor"]),
        unit_price=Decimal(doc["unit_price"]),
        pricing_quantity=Decimal(doc["pricing_quantity"]),
        cost=Decimal(doc["cost"]),
    )
