"""``tally usage --price-list``: a month rated line by line, as CSV and JSON, totals equal to the lines."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal
from pathlib import Path

import anyio
import pytest
from rating_support import ev, seed_store

from tally.cli import main

EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "price-list.yaml"
MONTH = ["--from", "2026-03-01T00:00:00Z", "--to", "2026-04-01T00:00:00Z"]


@pytest.fixture
def store_url(any_store_url: str) -> str:
    """A store of each backend holding the known month."""
    url = any_store_url
    anyio.run(seed_store, url)
    return url


def test_a_rated_csv_prices_each_line(store_url: str, tmp_path: Path) -> None:
    out = tmp_path / "rated.csv"
    args = ["usage", *MONTH, "--store", store_url, "--price-list", str(EXAMPLE), "--out", str(out)]
    assert main(args) == 0
    rows = {(r["resource_id"], r["state"], r["sku"]): r for r in csv.DictReader(io.StringIO(out.read_text()))}
    small = rows[("vm-1", "active", "instance.flavor.m1.small")]
    assert (small["consumed_quantity"], small["consumed_unit"], small["unit_price"], small["cost"]) == (
        "10",
        "Hours",
        "0.0200",
        "0.20",
    )
    assert rows[("vm-1", "active", "instance.vcpu_hour")]["cost"] == "0.40"  # 4 vCPU x 10 h x 0.01
    assert rows[("vm-1", "shutoff", "instance.vcpu_hour")]["cost"] == "0.08"  # stopped: 1
    shelved = rows[("vm-1", "shelved", "instance.ram_gb_hour")]
    assert (shelved["consumed_quantity"], shelved["factor"], shelved["cost"]) == ("16", "0", "0.00")
    volume = rows[("vol-1", "available", "volume.gb_hour.ssd")]
    assert (volume["consumed_quantity"], volume["unit_price"], volume["cost"]) == ("2400", "0.000150", "0.36")
    assert {r["currency"] for r in rows.values()} == {"EUR"}


def test_the_json_totals_are_the_sums_of_the_lines(store_url: str, tmp_path: Path) -> None:
    out = tmp_path / "rated.json"
    args = ["usage", *MONTH, "--store", store_url, "--price-list", str(EXAMPLE), "--format", "json"]
    assert main([*args, "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert (doc["price_list"], doc["currency"]) == ("public-eu", "EUR")
    sums: dict[str, Decimal] = {}
    for item in doc["items"]:
        sums[item["project_id"]] = sums.get(item["project_id"], Decimal(0)) + Decimal(item["cost"])
    assert doc["totals"] == {p: str(v) for p, v in sums.items()}
    # p-1: 0.20 (m1.small) + 0.40 + 0.40 + 0.02 (4 vCPU, 8 GB RAM, 20 GB disk for 10 h) + 0.08 + 0.08
    # + 0.00 (stopped 2 h: 0.004 of disk rounds to nothing) + 0 (shelved)
    assert doc["totals"] == {"p-1": "1.18", "p-2": "0.36"}


def test_a_bad_price_list_or_a_group_is_refused_in_one_line(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(EXAMPLE.read_text().replace('"0.0100"', "0.01", 1))
    assert main(["usage", *MONTH, "--store", store_url, "--price-list", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"tally usage: --price-list {bad}: versions[0].types.instance.vcpu_hour: "
        'a YAML float (0.01) where money belongs: quote it, as "0.01"'
    )
    args = ["usage", *MONTH, "--store", store_url, "--price-list", str(EXAMPLE), "--group-by", "project_id"]
    assert main(args) == 2
    assert "rating is per resource" in capsys.readouterr().err


def test_usage_before_the_first_version_is_refused(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    late = tmp_path / "late.yaml"
    late.write_text(EXAMPLE.read_text().replace("2026-01-01T00:00:00Z", "2026-03-01T12:00:00Z"))
    assert main(["usage", *MONTH, "--store", store_url, "--price-list", str(late)]) == 2
    assert capsys.readouterr().err.strip() == (
        "tally usage: instance vm-1 of cloud os-dev: no price version is in force at 2026-03-01T00:00:00Z"
    )


LEAP_PRICES = """
name: leap
currency: EUR
versions:
  - effective_from: "2024-01-01T00:00:00Z"
    minimum_seconds: 60
    types:
      instance: {flavors: {m1.small: "0.60"}}
"""


def test_a_leap_february_and_a_resource_of_twenty_seconds(any_store_url: str, tmp_path: Path) -> None:
    """February 2024 has 29 days (696 h); a resource that lived 20 s bills the list's minute."""
    small = {"vcpus": 1, "flavor": "m1.small"}
    events = [
        ev(1, "vm-feb", "compute.instance.create.end", "2024-01-15T00:00:00Z", state="active", size=small),
        ev(2, "vm-20s", "compute.instance.create.end", "2024-02-29T23:59:30Z", state="active", size=small),
        ev(3, "vm-20s", "compute.instance.delete.end", "2024-02-29T23:59:50Z"),
    ]
    anyio.run(seed_store, any_store_url, events)
    prices, out = tmp_path / "leap.yaml", tmp_path / "feb.csv"
    prices.write_text(LEAP_PRICES)
    window = ["--from", "2024-02-01T00:00:00Z", "--to", "2024-03-01T00:00:00Z"]
    assert (
        main(["usage", *window, "--store", any_store_url, "--price-list", str(prices), "--out", str(out)])
        == 0
    )
    rows = {r["resource_id"]: r for r in csv.DictReader(io.StringIO(out.read_text()))}
    feb = rows["vm-feb"]
    assert (feb["consumed_quantity"], feb["cost"]) == ("696", "417.60")
    short = rows["vm-20s"]
    assert (short["presence_s"], short["billed_s"], short["pricing_quantity"], short["cost"]) == (
        "20",
        "60",
        "0.016666667",
        "0.01",
    )
