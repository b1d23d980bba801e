"""The price list document: what it accepts, and the one-line refusal of each bad input."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from tally.cli import main
from tally.core import parse_instant
from tally.rating import PriceListError, load_price_list, parse_price_list
from tally.rating.internals import price_list_document

EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "price-list.yaml"

MINIMAL = """
name: small
currency: EUR
versions:
  - effective_from: "2026-01-01T00:00:00Z"
    types:
      instance:
        vcpu_hour: "0.0100"
"""


def _with(member: str) -> str:
    """MINIMAL with one more line under the instance's rules."""
    return MINIMAL + "".join(f"        {line}\n" for line in member.splitlines())


def test_the_example_is_read_to_decimals_and_ordered_versions() -> None:
    price_list = load_price_list(EXAMPLE.read_text())
    assert price_list.currency == "EUR" and price_list.minor_unit == 2
    first, second = price_list.versions
    assert first.effective_from == parse_instant("2026-01-01T00:00:00Z")
    instance = first.types["instance"]
    assert instance.flavors["m1.small"] == Decimal("0.0200")
    assert instance.prices["vcpu_hour"] == Decimal("0.0100")
    # nova's names are Tally's states: stopped is booked as shutoff, shelved_offloaded as shelved
    assert instance.factor("shutoff", "flavor") == 1 and instance.factor("shelved", "vcpu_hour") == 0
    assert instance.factor("paused", "flavor") == 1  # a state the list does not name bills at the default
    assert first.types["volume"].type_modifiers["ssd"] == Decimal("1.5")
    assert first.minimum_seconds == 60
    assert price_list.version_at(parse_instant("2026-03-15T12:00:00Z")) is second
    assert price_list.version_at(parse_instant("2025-12-31T23:59:59Z")) is None


def test_the_canonical_document_reads_back_equal() -> None:
    price_list = load_price_list(EXAMPLE.read_text())
    assert parse_price_list(price_list_document(price_list)) == price_list


def test_integers_are_money_too() -> None:
    price_list = load_price_list(MINIMAL.replace('"0.0100"', "2"))
    assert price_list.versions[0].types["instance"].prices["vcpu_hour"] == Decimal(2)


BAD = [
    (
        MINIMAL.replace('"0.0100"', "0.01"),
        "versions[0].types.instance.vcpu_hour: a YAML float (0.01) where money belongs",
    ),
    (MINIMAL.replace('"0.0100"', '"-0.01"'), "versions[0].types.instance.vcpu_hour: -0.01 is negative"),
    (
        MINIMAL.replace('"0.0100"', '"ten"'),
        "versions[0].types.instance.vcpu_hour: 'ten' is not a decimal number",
    ),
    (
        MINIMAL.replace('"0.0100"', '"NaN"'),
        "versions[0].types.instance.vcpu_hour: 'NaN' is not a finite number",
    ),
    (MINIMAL.replace("EUR", "EUX"), "currency: 'EUX' is not an ISO 4217 currency code"),
    (
        _with("states: {hibernated: '0'}"),
        "versions[0].types.instance.states.hibernated: instance has no state 'hibernated'",
    ),
    (
        _with("states: {stopped: '0', shutoff: '1'}"),
        "versions[0].types.instance.states.shutoff: names the state 'shutoff' a second time",
    ),
    (_with("gpu_hour: '1'"), "versions[0].types.instance.gpu_hour: unknown member"),
    (
        _with("states: {shelved: {gpu_hour: '0'}}"),
        "versions[0].types.instance.states.shelved.gpu_hour: unknown member",
    ),
    (
        _with("states: {shelved: {vcpu_hour: 0.5}}"),
        "versions[0].types.instance.states.shelved.vcpu_hour: a YAML float",
    ),
    (MINIMAL.replace('vcpu_hour: "0.0100"', "flavors: {}"), "versions[0].types.instance: prices nothing"),
    (MINIMAL.replace("instance:", "server:"), "versions[0].types.server: unknown member"),
    (MINIMAL.replace('"2026-01-01T00:00:00Z"', '"2026-01-01"'), "versions[0].effective_from: "),
    (MINIMAL.replace("rounding", "x") + "rounding: banker\n", "rounding: 'banker'"),
    (
        MINIMAL + MINIMAL.split("versions:\n")[1],
        "versions[1].effective_from: 2026-01-01T00:00:00Z overlaps versions[0], "
        "in force from the same instant",
    ),
    ("name: [", "line 1: not YAML"),
    (MINIMAL.replace("versions:", "minimum_seconds: 60\nversions:"), "minimum_seconds: unknown member"),
    (
        MINIMAL.replace("    types:", "    minimum_seconds: -1\n    types:"),
        "versions[0].minimum_seconds: expected a whole number",
    ),
    (
        MINIMAL.replace("    types:", "    granularity_seconds: 1.5\n    types:"),
        "versions[0].granularity_seconds: expected a whole number",
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_a_bad_price_list_is_refused_in_one_line_naming_the_member(text: str, message: str) -> None:
    with pytest.raises(PriceListError) as info:
        load_price_list(text)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_price_list_check_prints_the_versions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["price-list", "check", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "price list public-eu: EUR, 2 version(s)" in out
    assert "from 2026-03-15T12:00:00Z: floating_ip, image, instance, loadbalancer, volume" in out


def test_price_list_check_refuses_with_the_member_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(MINIMAL.replace('"0.0100"', "0.01"))
    assert main(["price-list", "check", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(
        f"tally price-list check: {bad}: versions[0].types.instance.vcpu_hour: a YAML float"
    )
    assert "\n" not in err


def test_a_state_may_bill_some_dimensions_only() -> None:
    """OVH bills a shelved instance's disk only: the other dimensions of the state at 0."""
    price_list = load_price_list(
        _with("states: {shelved_offloaded: {flavor: '0', vcpu_hour: '0', ram_gb_hour: '0'}}")
    )
    rules = price_list.versions[0].types["instance"]
    assert rules.factor("shelved", "vcpu_hour") == 0 and rules.factor("shelved", "disk_gb_hour") == 1
    assert rules.factor("active", "vcpu_hour") == 1
    assert parse_price_list(price_list_document(price_list)) == price_list
