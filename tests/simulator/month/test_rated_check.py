"""A rated export and its price list judged against the oracle: the export Tally writes for the
oracle's month passes, a cent off is off (unless the comparison tolerated the resource), and the
invoice per project is reported for both sides."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import anyio
import pytest

from tally.cli import main
from tally.core import format_instant, parse_event
from tally.rating import RatedExportError, RatingError, load_price_list, read_rated
from tally.simulation.rated_check import check_rated, rated_summary
from tally.simulator._verdict import Judgement
from tally.simulator.compare import Comparison, Difference, ResourceDiff
from tally.simulator.oracle import Oracle, OracleInterval, OracleResource
from tally.store import open_store

T0 = datetime(2026, 7, 1, tzinfo=UTC)
H = timedelta(hours=1)
SMALL = {"vcpus": 2, "ram_gb": 0.5, "disk_gb": 20, "flavor": "m1.small"}
ORACLE = Oracle(
    "os-sim",
    1,
    T0,
    T0 + 24 * H,
    (
        OracleResource(
            "instance",
            "vm-1",
            "classic",
            (
                OracleInterval(T0 + H, T0 + 5 * H, "active", "p", SMALL),
                OracleInterval(T0 + 5 * H, T0 + 9 * H, "shutoff", "p", SMALL),
            ),
        ),
    ),
)
PRICES = """
name: sim
currency: EUR
versions:
  - effective_from: "2026-01-01T00:00:00Z"
    types:
      instance: {flavors: {m1.small: "0.0333"}, states: {shutoff: "0.5"}}
"""


def _event(n: int, event_type: str, at: datetime, **payload: object) -> object:
    return parse_event(
        {
            "event_id": f"e{n}", "timestamp": format_instant(at), "event_type": event_type,
            "platform": "openstack", "cloud": "os-sim", "resource_type": "instance", "resource_id": "vm-1",
            "project_id": "p", "payload": payload,
        }
    )  # fmt: skip


@pytest.fixture
def export(tmp_path: Path) -> bytes:
    """What ``tally usage --price-list`` writes for a store holding the oracle's month."""
    url = f"sqlite:///{tmp_path / 'tally.sqlite3'}"

    async def fill() -> None:
        async with open_store(url) as store:
            await store.migrate_up()
            await store.write_batch(
                [
                    _event(1, "compute.instance.create.end", T0 + H, state="active", size=SMALL),  # type: ignore[list-item]
                    _event(2, "compute.instance.update", T0 + 5 * H, state="shutoff", size=SMALL),  # type: ignore[list-item]
                    _event(3, "compute.instance.delete.end", T0 + 9 * H),  # type: ignore[list-item]
                ]
            )

    anyio.run(fill)
    prices, out = tmp_path / "prices.yaml", tmp_path / "rated.csv"
    prices.write_text(PRICES)
    window = ["--from", format_instant(T0), "--to", format_instant(T0 + 24 * H)]
    assert main(["usage", *window, "--store", url, "--price-list", str(prices), "--out", str(out)]) == 0
    return out.read_bytes()


def no_differences() -> Comparison:
    return Comparison((), 1, {}, {}, timedelta(0), 0)


def tolerated_vm() -> Comparison:
    diff = Difference(T0, T0 + H, ("state",), None, None, Judgement(True, "poll-dated update"))
    return Comparison((ResourceDiff("instance", "vm-1", (diff,), 0.0, 0.0),), 0, {}, {}, timedelta(0), 0)


def test_the_export_of_the_oracles_month_passes_with_its_invoice(export: bytes) -> None:
    result = check_rated(ORACLE, read_rated(export), load_price_list(PRICES), no_differences())
    assert (result.check.passed, result.check.exact) == (True, 1)
    # 4 h active at 0.0333 = 0.1332 -> 0.13; 4 h stopped at half = 0.0666 -> 0.07
    assert result.oracle_totals == result.export_totals == {"p": Decimal("0.20")}
    assert rated_summary(result)[1] == "  invoice p: oracle 0.20 export 0.20"


def test_a_cent_off_is_off_unless_tolerated(export: bytes) -> None:
    wrong = export.replace(b",0.13,EUR", b",0.14,EUR")
    result = check_rated(ORACLE, read_rated(wrong), load_price_list(PRICES), no_differences())
    [m] = result.check.mismatches
    assert m.detail == (
        "project p state active instance.flavor.m1.small from 2026-07-01T00:00:00Z: "
        "cost oracle 0.13, export 0.14"
    )
    assert result.export_totals == {"p": Decimal("0.21")}
    assert check_rated(ORACLE, read_rated(wrong), load_price_list(PRICES), tolerated_vm()).check.passed


def test_an_unreadable_export_or_an_unplaceable_oracle_is_refused(export: bytes) -> None:
    with pytest.raises(RatedExportError, match=r"^line 2 cost: 'x' is not a decimal$"):
        read_rated(export.replace(b",0.13,EUR", b",x,EUR"))
    volumes_only = 'name: v\ncurrency: EUR\nversions:\n  - effective_from: "2026-01-01T00:00:00Z"\n'
    other = load_price_list(volumes_only + '    types:\n      volume: {gb_hour: "1"}\n')
    with pytest.raises(RatingError, match="prices no instance"):
        check_rated(ORACLE, read_rated(export), other, no_differences())
