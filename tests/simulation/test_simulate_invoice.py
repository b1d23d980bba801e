"""``tally simulate --price-list``: the simulated month ends with the invoice it would send.

The month is rated as ``tally usage --price-list`` rates it, the invoice judged line by line against
the oracle's month rated by the same list, and each project's total printed for both; ``--invoice``
writes it. Several seeds and fault sets, since an invoice right on one world proves little; bad input
is refused before the month runs.
"""

from __future__ import annotations

import dataclasses
import re
from decimal import Decimal
from pathlib import Path

import orjson
import pytest

from tally.cli import main
from tally.rating import load_price_list, read_rated
from tally.simulation.rated_check import RatedCheck
from tally.simulation.simulate import SimulateOptions, simulate
from tally.simulation.usage_check import UsageCheck, UsageMismatch

EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "price-list.yaml"
SMALL = ["--period", "2026-07", "--scale", "0.3", "--days", "2", "--factor", "0"]
INVOICE_LINE = re.compile(r"^  invoice (\S+): oracle (\S+) export (\S+)$", re.M)


@pytest.mark.parametrize(
    ("seed", "faults"),
    [
        (1, "duplicates,reordering,held-back,missing-delete,lost-update"),
        (23, "missing-create,refused-shapes,lost-update"),
        (4711, ""),
    ],
)
def test_the_month_ends_with_its_invoice_judged_by_the_oracles(
    seed: int, faults: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    invoice, doc = tmp_path / "invoice.csv", tmp_path / "run.json"
    argv = ["simulate", "--seed", str(seed), *SMALL, "--faults", faults, "--price-list", str(EXAMPLE)]
    code = main([*argv, "--invoice", str(invoice), "--json", str(doc)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "rated export passed" in printed
    # Each project's invoice, both sides, equal to the cent; and equal to the sum of the written lines.
    shown = {p: (Decimal(o), Decimal(e)) for p, o, e in INVOICE_LINE.findall(printed)}
    rated = orjson.loads(doc.read_bytes())["rated_export"]
    assert shown and rated["off"] == 0
    # A project's totals may differ only by resources the comparison tolerated (poll-dated corrections).
    tolerated = {m["resource_id"] for m in rated["mismatches"] if m["tolerated"]}
    assert tolerated or all(o == e for o, e in shown.values())
    written: dict[str, Decimal] = {}
    for lines in read_rated(invoice.read_bytes()).values():
        for (project, *_), amounts in lines.items():
            written[project] = written.get(project, Decimal(0)) + amounts.cost
    assert written == {p: e for p, (_, e) in shown.items()}
    assert rated["export_totals"] == {p: str(e) for p, (_, e) in shown.items()}


def test_a_json_invoice_carries_the_totals_per_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    invoice = tmp_path / "invoice.json"
    code = main(["simulate", "--seed", "5", *SMALL, "--price-list", str(EXAMPLE), "--invoice", str(invoice)])
    assert code == 0, capsys.readouterr().out
    document = orjson.loads(invoice.read_bytes())
    assert document["currency"] == "EUR" and document["price_list"] == "public-eu"
    sums: dict[str, Decimal] = {}
    for item in document["items"]:
        sums[item["project_id"]] = sums.get(item["project_id"], Decimal(0)) + Decimal(item["cost"])
    assert {p: Decimal(v) for p, v in document["totals"].items()} == sums


@pytest.mark.anyio
async def test_an_invoice_off_fails_the_run(tmp_path: Path) -> None:
    options = SimulateOptions(
        seed=2, period="2026-07", scale=0.3, days=2, price_list=load_price_list(EXAMPLE.read_text())
    )
    result = await simulate(options)
    assert result.rated is not None and result.invoice is not None and result.passed
    project = next(iter(result.rated.export_totals))
    cent_off = RatedCheck(
        UsageCheck(0, (UsageMismatch("instance", "vm-1", "cost oracle 1.00, export 1.01", False),)),
        result.rated.oracle_totals,
        result.rated.export_totals | {project: result.rated.export_totals[project] + Decimal("0.01")},
    )
    assert not dataclasses.replace(result, rated=cent_off).passed
    assert dataclasses.replace(result, rated=None, invoice=None).passed
    assert "rated_export" not in dataclasses.replace(result, rated=None).to_doc()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--invoice", "{tmp}/invoice.csv"],
            "--invoice {tmp}/invoice.csv: an invoice is rated, give --price-list",
        ),
        (
            ["--price-list", "{tmp}/prices.yaml", "--invoice", "{tmp}/nowhere/invoice.csv"],
            "the directory {tmp}/nowhere does not exist",
        ),
        (["--price-list", "{tmp}/prices.yaml"], "{tmp}/prices.yaml: versions[0].types.floating_ip.hour"),
        (["--price-list", "{tmp}/absent.yaml"], "absent.yaml"),
    ],
)
def test_bad_invoice_arguments_exit_2_before_the_month_runs(
    extra: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "prices.yaml").write_text(
        EXAMPLE.read_text().replace('hour: "0.0040"', 'hour: "-0.0040"', 1), encoding="utf-8"
    )
    state = tmp_path / "state"
    argv = [a.format(tmp=tmp_path) for a in extra]
    assert main(["simulate", "--seed", "1", *SMALL, "--state-dir", str(state), *argv]) == 2
    err = capsys.readouterr().err
    assert message.format(tmp=tmp_path) in err and err.count("\n") == 1, err
    assert not state.exists()


def test_a_month_the_price_list_cannot_price_exits_2_naming_the_resource(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A valid list that prices instances alone: the month's floating IPs have no price on it.
    only_small = tmp_path / "small.yaml"
    only_small.write_text(
        "name: small-only\ncurrency: EUR\nversions:\n"
        '  - effective_from: "2026-01-01T00:00:00Z"\n'
        '    types:\n      instance: {flavors: {m1.nothing: "0.01"}}\n',
        encoding="utf-8",
    )
    load_price_list(only_small.read_text())  # a valid list: what it cannot place is the month's
    assert main(["simulate", "--seed", "1", *SMALL, "--price-list", str(only_small)]) == 2
    # The progress view logs on stderr off a terminal; the refusal is the last line.
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("tally simulate: floating_ip ") and "prices no floating_ip" in last, last
