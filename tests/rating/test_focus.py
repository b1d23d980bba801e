"""The FOCUS export (1.2) as CSV and Parquet, held to FOCUS's column rules; the billing account from
the project registry, a project that moves between accounts cut at the instant it moved."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pyarrow.parquet as pq
import pytest
from rating_support import seed_accounts, seed_store

from tally.cli import main
from tally.rating._currency import MINOR_UNITS
from tally.rating.internals import FOCUS_COLUMNS

EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "price-list.yaml"
MONTH = ["--from", "2026-03-01T00:00:00Z", "--to", "2026-04-01T00:00:00Z"]

# FOCUS 1.2: the columns a usage dataset must carry, those that must never be null, allowed values.
MANDATORY = {
    "BilledCost", "BillingAccountId", "BillingAccountName", "BillingAccountType", "BillingCurrency",
    "BillingPeriodEnd", "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription",
    "ChargePeriodEnd", "ChargePeriodStart", "ContractedCost", "EffectiveCost", "InvoiceIssuerName",
    "ListCost", "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName", "ServiceCategory",
    "ServiceName", "ServiceSubcategory",
}  # fmt: skip
NOT_NULL = MANDATORY - {"ChargeClass", "BillingAccountName", "ChargeDescription"}
ALLOWED = {
    "ChargeCategory": {"Usage", "Purchase", "Tax", "Credit", "Adjustment"},
    "ChargeClass": {"", "Correction"},
    "ChargeFrequency": {"One-Time", "Recurring", "Usage-Based"},
    "PricingCategory": {"Standard", "Dynamic", "Committed", "Other"},
    "ServiceCategory": {
        "AI and Machine Learning", "Analytics", "Business Applications", "Compute", "Databases",
        "Developer Tools", "Multicloud", "Identity", "Integration", "Internet of Things",
        "Management and Governance",
        "Media", "Migration", "Mobile", "Networking", "Security", "Storage", "Web", "Other",
    },
}  # fmt: skip
DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
DECIMALS = ("BilledCost", "ContractedCost", "EffectiveCost", "ListCost", "ListUnitPrice", "PricingQuantity",
            "ConsumedQuantity", "ContractedUnitPrice")  # fmt: skip


def check_focus_rules(header: list[str], rows: list[Mapping[str, str]]) -> None:
    """FOCUS 1.2's column rules this export must keep (the spec's normative MUSTs that apply)."""
    assert set(header) >= MANDATORY
    for name in header:  # a column is FOCUS's, or a custom one prefixed x_
        assert name in FOCUS_COLUMNS or name.startswith("x_"), name
        assert re.fullmatch(r"(x_)?[A-Z][A-Za-z]*", name), name  # PascalCase
    for row in rows:
        for name in NOT_NULL:
            assert row[name] != "", (name, row)
        for name, allowed in ALLOWED.items():
            assert row[name] in allowed, (name, row[name])
        for name in ("BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd"):
            assert DATETIME.match(row[name]), (name, row[name])
        assert row["BillingPeriodStart"] < row["BillingPeriodEnd"]
        assert row["ChargePeriodStart"] < row["ChargePeriodEnd"]
        if row["ChargeClass"] != "Correction":  # a correction's charge period is the invoiced one's
            assert row["BillingPeriodStart"] <= row["ChargePeriodStart"]
            assert row["ChargePeriodEnd"] <= row["BillingPeriodEnd"]
        assert row["BillingCurrency"] in MINOR_UNITS
        values = {name: Decimal(row[name]) for name in DECIMALS if row[name] != ""}
        minor = Decimal(1).scaleb(-MINOR_UNITS[row["BillingCurrency"]])
        # ListCost = ListUnitPrice x PricingQuantity, ContractedCost likewise (to the line's rounding)
        assert abs(values["ListUnitPrice"] * values["PricingQuantity"] - values["ListCost"]) <= minor / 2
        assert (
            abs(values["ContractedUnitPrice"] * values["PricingQuantity"] - values["ContractedCost"])
            <= minor / 2
        )
        assert values["BilledCost"] == values["EffectiveCost"] == values["ListCost"]
        if row["ConsumedQuantity"] != "":
            assert row["ConsumedUnit"] != ""
        if row["PricingQuantity"] != "":
            assert row["PricingUnit"] != ""
        if row["ChargeClass"] != "Correction":
            assert values["PricingQuantity"] >= 0 and values["BilledCost"] >= 0


@pytest.fixture
def store_url(any_store_url: str) -> str:
    """A store of each backend holding the known month."""
    url = any_store_url
    anyio.run(seed_store, url)
    anyio.run(seed_accounts, url)
    return url


def _export(store_url: str, tmp_path: Path, fmt: str) -> Path:
    out = tmp_path / f"focus.{fmt}"
    args = ["usage", *MONTH, "--store", store_url, "--price-list", str(EXAMPLE), "--format", fmt]
    assert main([*args, "--provider", "Example Cloud", "--out", str(out)]) == 0
    return out


def test_the_focus_csv_keeps_focus_rules_and_bills_the_registry_accounts(
    store_url: str, tmp_path: Path
) -> None:
    text = _export(store_url, tmp_path, "focus-csv").read_text()
    reader = csv.DictReader(io.StringIO(text))
    rows = list(reader)
    check_focus_rules(list(reader.fieldnames or []), rows)
    by_account: dict[str, Decimal] = {}
    for row in rows:
        by_account[row["BillingAccountId"]] = by_account.get(row["BillingAccountId"], Decimal(0)) + Decimal(
            row["BilledCost"]
        )
    # p-1 moved from acme to globex at 12:00: its 10 h of m1.small (0.20) and 2 h of the resized
    # flavor bill acme; the rest globex. p-2 (no account) is its own.
    assert by_account == {"acme": Decimal("0.36"), "globex": Decimal("0.82"), "p-2": Decimal("0.36")}
    small = next(r for r in rows if r["SkuId"] == "instance.flavor.m1.small")
    assert small["SubAccountId"] == "p-1" and small["SubAccountName"] == "web"
    assert (small["BillingAccountName"], small["BillingAccountType"]) == ("ACME Corp", "Billing Account")
    assert (small["ChargePeriodStart"], small["ChargePeriodEnd"]) == (
        "2026-03-01T00:00:00Z",
        "2026-03-01T12:00:00Z",
    )
    assert (small["ServiceCategory"], small["ServiceName"], small["ProviderName"]) == (
        "Compute",
        "Compute",
        "Example Cloud",
    )
    assert (
        small["ConsumedQuantity"],
        small["ConsumedUnit"],
        small["x_State"],
        small["x_PresenceSeconds"],
    ) == ("10", "Hours", "active", "36000")
    volume = next(r for r in rows if r["ResourceId"] == "vol-1")
    assert (volume["BillingAccountId"], volume["BillingAccountType"], volume["ServiceCategory"]) == (
        "p-2",
        "Project",
        "Storage",
    )


def test_the_focus_parquet_holds_the_csv_rows_typed(store_url: str, tmp_path: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(_export(store_url, tmp_path, "focus-csv").read_text())))
    table = pq.read_table(_export(store_url, tmp_path, "focus-parquet"))
    assert table.schema.field("BilledCost").type.scale == 12
    assert str(table.schema.field("ChargePeriodStart").type) == "timestamp[us, tz=UTC]"
    assert table.schema.metadata[b"focus_version"] == b"1.2"
    got: list[dict[str, Any]] = table.to_pylist()
    assert len(got) == len(rows)
    for typed, text in zip(got, rows, strict=True):
        assert typed["BilledCost"] == Decimal(text["BilledCost"])
        assert typed["PricingQuantity"] == Decimal(text["PricingQuantity"])
        assert typed["ChargePeriodStart"].strftime("%Y-%m-%dT%H:%M:%SZ") == text["ChargePeriodStart"]
        assert typed["ChargeClass"] is None and text["ChargeClass"] == ""
        assert typed["SkuId"] == text["SkuId"]


def test_a_focus_export_needs_a_price_list(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["usage", *MONTH, "--store", store_url, "--format", "focus-csv"]) == 2
    assert capsys.readouterr().err.strip() == (
        "tally usage: --format focus-csv: a FOCUS export is rated: give --price-list"
    )
