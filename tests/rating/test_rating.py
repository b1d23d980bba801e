"""Rating one resource: version splits at their instant, state factors, granularity and minimum,
one ROUND_HALF_UP per line, and totals that are the sum of their lines to the cent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tally.core import ResourceKey, UsageFact, UsageWindow, fact_usage
from tally.rating import (
    PriceList,
    RatedLine,
    RatingError,
    load_price_list,
    project_totals,
    quantity_text,
    rate_facts,
)
from tally.rating.internals import billed_us, line_cost

T0 = datetime(2026, 3, 1, tzinfo=UTC)
T1 = datetime(2026, 4, 1, tzinfo=UTC)
MID = datetime(2026, 3, 15, 12, tzinfo=UTC)
KEY = ResourceKey("c1", "instance", "vm-1")


def price_list(
    *, split: bool = False, shelved: str = "0", granularity: int = 1, minimum: int = 0, flavor: str = "0.0200"
) -> PriceList:
    def version(at: datetime, vcpu: str) -> str:
        return f"""
  - effective_from: "{at.isoformat().replace("+00:00", "Z")}"
    granularity_seconds: {granularity}
    minimum_seconds: {minimum}
    types:
      instance:
        flavors: {{m1.small: "{flavor}"}}
        vcpu_hour: "{vcpu}"
        ram_gb_hour: "0.0050"
        states: {{shelved: "{shelved}", paused: "0.5"}}
      volume:
        gb_hour: "0.0001"
        type_modifiers: {{ssd: "1.5"}}
"""

    versions = version(T0 - timedelta(days=90), "0.0100")
    if split:
        versions += version(MID, "0.0300")
    return load_price_list(f"name: t\ncurrency: EUR\nversions:{versions}")


SIZES = st.sampled_from(
    [
        {"vcpus": 1, "ram_gb": 2, "flavor": "m1.small"},
        {"vcpus": 4, "ram_gb": 8, "flavor": "m1.xlarge"},
        {"vcpus": 2, "ram_gb": 0.5, "flavor": "odd"},
    ]
)
STATES = st.sampled_from(["active", "shutoff", "shelved", "paused"])
INSTANTS = st.integers(-2 * 86_400, 33 * 86_400).map(lambda s: T0 + timedelta(seconds=s))


@st.composite
def histories(draw: st.DrawFn) -> list[UsageFact]:
    at = draw(INSTANTS)
    facts: list[UsageFact] = [
        (at, at, "e0", "compute.instance.create.end", "p1", "active", draw(SIZES)),
    ]
    for n in range(draw(st.integers(0, 5))):
        at = at + timedelta(seconds=draw(st.integers(1, 5 * 86_400)))
        kind = draw(
            st.sampled_from(
                ["compute.instance.update", "compute.instance.update", "compute.instance.delete.end"]
            )
        )
        project = draw(st.sampled_from(["p1", "p1", "p2"]))
        facts.append((at, at, f"e{n + 1}", kind, project, draw(STATES), draw(SIZES)))
    return facts


WINDOW = UsageWindow(T0, T1, T1)


def _exact(line: RatedLine) -> Decimal:
    return line.pricing_quantity * line.unit_price


@settings(max_examples=200, deadline=None)
@given(histories(), st.sampled_from([1, 60, 3600]), st.sampled_from([0, 60, 7200]))
def test_a_line_is_rounded_once_half_up_and_totals_are_the_sum_of_lines(
    facts: list[UsageFact], granularity: int, minimum: int
) -> None:
    lines = rate_facts(KEY, facts, WINDOW, price_list(granularity=granularity, minimum=minimum))
    for line in lines:
        assert line.cost == line.cost.quantize(Decimal("0.01"))
        assert abs(line.cost - _exact(line)) <= Decimal("0.005")
        assert line.billed_us >= line.presence_us > 0
        assert line.billed_us >= minimum * 1_000_000
        assert line.billed_us % (granularity * 1_000_000) == 0 or line.billed_us == minimum * 1_000_000
    totals = project_totals(lines)
    for project, total in totals.items():
        assert total == sum((line.cost for line in lines if line.project_id == project), Decimal(0))
    assert sum(totals.values(), Decimal(0)) == sum((line.cost for line in lines), Decimal(0))


@settings(max_examples=200, deadline=None)
@given(histories())
def test_a_version_change_splits_the_usage_at_its_instant(facts: list[UsageFact]) -> None:
    one = rate_facts(KEY, facts, WINDOW, price_list())
    two = rate_facts(KEY, facts, WINDOW, price_list(split=True))
    for line in two:
        assert line.charge_end <= MID or line.charge_start >= MID
        if line.sku == "instance.vcpu_hour":
            assert line.unit_price == (Decimal("0.0300") if line.charge_start >= MID else Decimal("0.0100"))

    def consumed(lines: list[RatedLine]) -> dict[tuple[str, str, str], Decimal]:
        out: dict[tuple[str, str, str], Decimal] = {}
        for line in lines:
            k = (line.project_id, line.state, line.sku)
            out[k] = out.get(k, Decimal(0)) + line.consumed
        return out

    # The split moves no usage: the same quantities, cut in two.
    a, b = consumed(one), consumed(two)
    assert a.keys() == b.keys()
    for k in a:
        assert abs(a[k] - b[k]) < Decimal("1e-20")  # the sums above run at 28 digits


@settings(max_examples=100, deadline=None)
@given(histories())
def test_the_rated_quantities_are_the_exports_quantities(facts: list[UsageFact]) -> None:
    """The invariant an invoice rests on: what it bills is what the usage export measured."""
    lines = rate_facts(KEY, facts, WINDOW, price_list())
    for (project, state), usage in fact_usage(facts, WINDOW).items():
        mine = [line for line in lines if (line.project_id, line.state) == (project, state)]
        assert sum(line.presence_us for line in mine) >= usage.presence_us  # flavor and components both
        vcpu = sum((line.consumed for line in mine if line.sku == "instance.vcpu_hour"), Decimal(0))
        flavor_us = sum(line.presence_us for line in mine if line.sku.startswith("instance.flavor."))
        # vCPU-hours are billed for the time not covered by a priced flavor
        assert vcpu <= Decimal(usage.quantities.get("vcpus", 0)) / 3_600_000_000
        assert flavor_us <= usage.presence_us


def test_state_factors_scale_the_quantity_and_a_zero_bills_nothing() -> None:
    facts: list[UsageFact] = [
        (
            T0,
            T0,
            "a",
            "compute.instance.create.end",
            "p1",
            "active",
            {"vcpus": 2, "ram_gb": 4, "flavor": "x"},
        ),
        (
            T0 + timedelta(hours=10),
            T0,
            "b",
            "compute.instance.update",
            "p1",
            "paused",
            {"vcpus": 2, "ram_gb": 4, "flavor": "x"},
        ),
        (
            T0 + timedelta(hours=20),
            T0,
            "c",
            "compute.instance.update",
            "p1",
            "shelved",
            {"vcpus": 2, "ram_gb": 4, "flavor": "x"},
        ),
        (T0 + timedelta(hours=30), T0, "d", "compute.instance.delete.end", "p1", None, None),
    ]
    lines = {(line.state, line.sku): line for line in rate_facts(KEY, facts, WINDOW, price_list())}
    active = lines[("active", "instance.vcpu_hour")]
    assert active.consumed == 20 and active.pricing_quantity == 20 and active.cost == Decimal("0.20")
    paused = lines[("paused", "instance.vcpu_hour")]
    assert paused.consumed == 20 and paused.pricing_quantity == 10 and paused.cost == Decimal("0.10")
    shelved = lines[("shelved", "instance.ram_gb_hour")]
    assert shelved.consumed == 40 and shelved.cost == 0


def test_a_priced_flavor_bills_its_hours_and_an_unpriced_one_its_components() -> None:
    facts: list[UsageFact] = [
        (
            T0,
            T0,
            "a",
            "compute.instance.create.end",
            "p1",
            "active",
            {"vcpus": 1, "ram_gb": 2, "flavor": "m1.small"},
        ),
        (
            T0 + timedelta(hours=3),
            T0,
            "b",
            "compute.instance.resize.confirm.end",
            "p1",
            "active",
            {"vcpus": 4, "ram_gb": 8, "flavor": "big"},
        ),
        (T0 + timedelta(hours=5), T0, "c", "compute.instance.delete.end", "p1", None, None),
    ]
    lines = {line.sku: line for line in rate_facts(KEY, facts, WINDOW, price_list())}
    assert set(lines) == {"instance.flavor.m1.small", "instance.vcpu_hour", "instance.ram_gb_hour"}
    assert lines["instance.flavor.m1.small"].cost == Decimal("0.06")  # 3 h x 0.02
    assert lines["instance.vcpu_hour"].consumed == 8  # 2 h x 4 vCPU
    assert lines["instance.ram_gb_hour"].cost == Decimal("0.08")  # 16 GB-h x 0.005


def test_a_resource_of_twenty_seconds_bills_the_minute() -> None:
    facts: list[UsageFact] = [
        (T0, T0, "a", "compute.instance.create.end", "p1", "active", {"vcpus": 60, "flavor": "x"}),
        (T0 + timedelta(seconds=20), T0, "b", "compute.instance.delete.end", "p1", None, None),
    ]
    [line] = rate_facts(KEY, facts, WINDOW, price_list(minimum=60))
    assert line.presence_us == 20_000_000 and line.billed_us == 60_000_000
    assert quantity_text(line.consumed) == "0.333333333"  # 60 vCPU x 20 s, in vCPU-hours
    assert line.pricing_quantity == 1  # 60 vCPU for one minute
    assert line.cost == Decimal("0.01")


def test_rounding_is_half_up_to_the_minor_unit() -> None:
    assert line_cost(Decimal("0.5"), Decimal("0.01"), 2) == Decimal("0.01")  # 0.005 -> 0.01
    assert line_cost(Decimal("0.4999"), Decimal("0.01"), 2) == Decimal("0.00")
    assert line_cost(Decimal("2.5"), Decimal("1"), 0) == Decimal("3")  # JPY
    assert line_cost(Decimal("1"), Decimal("0.0125"), 3) == Decimal("0.013")  # KWD
    assert billed_us(1, 60, 0) == 60_000_000 and billed_us(61_000_000, 60, 0) == 120_000_000


def test_a_volume_type_modifier_multiplies_the_gb_price() -> None:
    key = ResourceKey("c1", "volume", "v-1")
    facts: list[UsageFact] = [
        (T0, T0, "a", "volume.create.end", "p1", "available", {"size_gb": 100, "type": "ssd"}),
    ]
    window = UsageWindow(T0, T0 + timedelta(hours=10), T1)
    [line] = rate_facts(key, facts, window, price_list())
    assert line.sku == "volume.gb_hour.ssd" and line.unit_price == Decimal("0.00015")
    assert line.cost == Decimal("0.15")  # 1000 GB-h x 0.00015


def test_usage_the_list_cannot_place_is_refused_naming_the_resource() -> None:
    flavors_only = load_price_list(
        'name: t\ncurrency: EUR\nversions:\n  - effective_from: "2026-03-02T00:00:00Z"\n'
        '    types:\n      instance:\n        flavors: {m1.small: "0.02"}\n'
    )
    small: list[UsageFact] = [
        (T0, T0, "a", "compute.instance.create.end", "p1", "active", {"flavor": "m1.small"})
    ]
    with pytest.raises(
        RatingError,
        match=r"^instance vm-1 of cloud c1: no price version is in force at 2026-03-01T00:00:00Z$",
    ):
        rate_facts(KEY, small, WINDOW, flavors_only)
    late = UsageWindow(T0 + timedelta(days=2), T1, T1)
    big: list[UsageFact] = [(T0, T0, "a", "compute.instance.create.end", "p1", "active", {"flavor": "m9"})]
    with pytest.raises(
        RatingError, match="flavor 'm9' has no price in the version from 2026-03-02T00:00:00Z"
    ):
        rate_facts(KEY, big, late, flavors_only)
    with pytest.raises(RatingError, match="prices no image"):
        rate_facts(ResourceKey("c1", "image", "i"), small, late, flavors_only)


def test_a_shelved_instance_may_bill_its_disk_only() -> None:
    disk_only = load_price_list(
        'name: ovh\ncurrency: EUR\nversions:\n  - effective_from: "2026-01-01T00:00:00Z"\n    types:\n'
        '      instance:\n        vcpu_hour: "0.01"\n        disk_gb_hour: "0.001"\n'
        "        states: {shelved: {vcpu_hour: '0'}}\n"
    )
    size = {"vcpus": 2, "disk_gb": 20, "flavor": "x"}
    facts: list[UsageFact] = [
        (T0, T0, "a", "compute.instance.create.end", "p1", "shelved", size),
        (T0 + timedelta(hours=10), T0, "b", "compute.instance.delete.end", "p1", None, None),
    ]
    costs = {line.sku: line.cost for line in rate_facts(KEY, facts, WINDOW, disk_only)}
    assert costs == {"instance.vcpu_hour": Decimal("0.00"), "instance.disk_gb_hour": Decimal("0.20")}
