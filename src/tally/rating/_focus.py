"""The FOCUS export: rated lines as rows of the FinOps Open Cost and Usage Specification, version 1.2.

One row per rated line (``_rate``): ``ChargeCategory`` ``Usage``, ``ChargeClass`` null, or
``CorrectionReason`` for a line that corrects a period already invoiced. List, contracted, billed and
effective cost are the line's cost (a list price is the price billed: no discount or commitment
applies). The billing account is the project registry's (``_accounts``), the sub account the
project. Tally's own facts follow as ``x_`` columns, as FOCUS's extensibility rule asks.
docs/invoicing.md documents every column; ``tests/rating/test_focus.py`` holds the rows to FOCUS's
column rules. Pure: rows of texts (CSV) or typed values (Parquet, ``_parquet``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from functools import lru_cache
from typing import Final

from tally.core import seconds_text

from ._accounts import BillingAccounts
from ._price_list import PriceList
from ._rate import RatedLine, quantity_text

FOCUS_VERSION: Final = "1.2"

#: resource type -> (ServiceCategory, ServiceSubcategory, ServiceName)
SERVICES: Final[Mapping[str, tuple[str, str, str]]] = {
    "instance": ("Compute", "Virtual Machines", "Compute"),
    "volume": ("Storage", "Block Storage", "Block Storage"),
    "image": ("Storage", "Other (Storage)", "Images"),
    "floating_ip": ("Networking", "Network Connectivity", "Floating IPs"),
    "loadbalancer": ("Networking", "Application Networking", "Load Balancers"),
}

FOCUS_COLUMNS: Final = (
    "BilledCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingAccountType",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "ConsumedQuantity",
    "ConsumedUnit",
    "ContractedCost",
    "ContractedUnitPrice",
    "EffectiveCost",
    "InvoiceIssuerName",
    "ListCost",
    "ListUnitPrice",
    "PricingCategory",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "RegionId",
    "RegionName",
    "ResourceId",
    "ResourceType",
    "ServiceCategory",
    "ServiceName",
    "ServiceSubcategory",
    "SkuId",
    "SkuPriceId",
    "SubAccountId",
    "SubAccountName",
    "SubAccountType",
)
TALLY_COLUMNS: Final = (
    "x_State",
    "x_Source",
    "x_CorrectionReason",
    "x_CorrectionSyncRun",
    "x_PresenceSeconds",
    "x_BilledSeconds",
    "x_StateFactor",
    "x_PriceList",
    "x_PriceVersionFrom",
)
COLUMNS: Final = FOCUS_COLUMNS + TALLY_COLUMNS
#: Columns of FOCUS's Decimal type (and Tally's numbers), typed as decimals in Parquet.
DECIMAL_COLUMNS: Final = frozenset(
    {
        "BilledCost",
        "ConsumedQuantity",
        "ContractedCost",
        "ContractedUnitPrice",
        "EffectiveCost",
        "ListCost",
        "ListUnitPrice",
        "PricingQuantity",
        "x_PresenceSeconds",
        "x_BilledSeconds",
        "x_StateFactor",
    }
)
#: Columns of FOCUS's Date/Time type.
DATETIME_COLUMNS: Final = frozenset(
    {"BillingPeriodEnd", "BillingPeriodStart", "ChargePeriodEnd", "ChargePeriodStart", "x_PriceVersionFrom"}
)

Cell = str | Decimal | datetime | None


@dataclass(frozen=True, slots=True)
class FocusContext:
    """What every row of one export shares: the billing period, the price list, the accounts, and
    the provider's name (``ProviderName``, ``PublisherName``, ``InvoiceIssuerName``)."""

    period_start: datetime
    period_end: datetime
    price_list: PriceList
    accounts: BillingAccounts
    provider: str


@dataclass(frozen=True, slots=True)
class CorrectionReason:
    """Why a line corrects an invoiced period: the reason, and the sync run that brought it (if any)."""

    reason: str
    sync_run: str | None = None


def _description(line: RatedLine) -> str:
    detail = line.sku.split(".", 2)[2] if line.sku.count(".") >= 2 else ""
    what = f"{line.dimension.description} {detail}" if detail else line.dimension.description
    return f"{what}, {line.state}"


@lru_cache(maxsize=1024)
def _focus_instant(at: datetime) -> str:
    # FOCUS's Date/Time format: ISO 8601, UTC, to the second. A month's rows share a few instants.
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def focus_cells(line: RatedLine, ctx: FocusContext, correction: CorrectionReason | None = None) -> list[Cell]:
    """One FOCUS row of ``line``, typed (decimals, instants), in ``COLUMNS`` order."""
    key = line.key
    project = (key.cloud, line.project_id)
    account = ctx.accounts.account_at(project, line.charge_start)
    category, subcategory, service = SERVICES[key.resource_type]
    pricing = Decimal(quantity_text(line.pricing_quantity))
    price_list = ctx.price_list
    return [
        line.cost,
        account.id,
        account.name,
        account.type,
        price_list.currency,
        ctx.period_end,
        ctx.period_start,
        "Usage",
        None if correction is None else "Correction",
        _description(line),
        "Usage-Based",
        line.charge_end,
        line.charge_start,
        Decimal(quantity_text(line.consumed)),
        line.dimension.unit,
        line.cost,
        line.unit_price,
        line.cost,
        ctx.provider,
        line.cost,
        line.unit_price,
        "Standard",
        pricing,
        line.dimension.unit,
        ctx.provider,
        ctx.provider,
        key.cloud,
        key.cloud,
        key.resource_id,
        key.resource_type,
        category,
        service,
        subcategory,
        line.sku,
        f"{price_list.name}/{_focus_instant(line.version_from)}/{line.sku}",
        line.project_id,
        ctx.accounts.project_name(project),
        "Project",
        line.state,
        "usage" if correction is None else "correction",
        None if correction is None else correction.reason,
        None if correction is None else correction.sync_run,
        Decimal(seconds_text(line.presence_us)),
        Decimal(seconds_text(line.billed_us)),
        line.factor,
        price_list.name,
        line.version_from,
    ]


def _text(value: Cell) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return _focus_instant(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    return value


def focus_texts(cells: Sequence[Cell]) -> list[str]:
    """A typed row as the CSV writes it (an empty cell is null)."""
    return [_text(c) for c in cells]
