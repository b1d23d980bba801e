"""Golden scenario, on SQLite and PostgreSQL: March closed, its lines frozen and reproduced byte for
byte; then a late create and a late delete: correction lines, a debit and a credit, once; the
closed lines unchanged; and what March bills in the end is what its usage measures now."""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from pathlib import Path

import anyio
import pytest
from rating_support import SMALL, ev, known_month, seed_store
from test_focus import check_focus_rules

from tally.cli import main
from tally.core import format_instant, parse_instant
from tally.store import open_store

EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "price-list.yaml"
MARCH = ["--cloud", "os-dev", "--period", "2026-03"]


def late_events() -> list:  # type: ignore[type-arg]
    return [
        # a late create: vm-late ran a day in March, never seen before the close
        ev(
            20,
            "vm-late",
            "compute.instance.create.end",
            "2026-03-05T00:00:00Z",
            project="p-3",
            state="active",
            size=SMALL,
        ),
        ev(21, "vm-late", "compute.instance.delete.end", "2026-03-06T00:00:00Z", project="p-3"),
        # a late delete: vm-run was billed to the end of March; it was deleted on the 11th
        ev(22, "vm-run", "compute.instance.delete.end", "2026-03-11T00:00:00Z"),
    ]


def running() -> list:  # type: ignore[type-arg]
    return [
        ev(10, "vm-run", "compute.instance.create.end", "2026-03-01T00:00:00Z", state="active", size=SMALL)
    ]


def _run(*args: str) -> int:
    return main(list(args))


def test_a_closed_month_is_frozen_and_corrected_by_lines_of_its_own(
    any_store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = any_store_url
    anyio.run(seed_store, url, known_month() + running())
    assert _run("price-list", "load", str(EXAMPLE), "--store", url) == 0
    assert _run("period", "close", *MARCH, "--price-list", "public-eu", "--store", url) == 0
    out = capsys.readouterr().out
    # vm-run: m1.small for the month, priced in two (the list's second version, from the 15th at
    # noon): 348 h x 0.02 = 6.96 and 396 h x 0.018 = 7.128 -> 7.13, on top of p-1's 1.18
    assert "  p-1: 15.27" in out and "  p-2: 0.36" in out

    async def closed_at() -> str:
        async with open_store(url) as store:
            period = await store.get_period("os-dev", parse_instant("2026-03-01T00:00:00Z"))
            assert period is not None
            return format_instant(period.closed_at)

    at = anyio.run(closed_at)
    frozen, export = tmp_path / "frozen.csv", tmp_path / "export.csv"
    assert _run("period", "show", *MARCH, "--store", url, "--out", str(frozen)) == 0
    window = ["--from", "2026-03-01T00:00:00Z", "--to", "2026-04-01T00:00:00Z", "--as-of", at]
    assert (
        _run(
            "usage",
            *window,
            "--cloud",
            "os-dev",
            "--price-list",
            str(EXAMPLE),
            "--store",
            url,
            "--out",
            str(export),
        )
        == 0
    )
    assert frozen.read_bytes() == export.read_bytes()  # the export as of the close, byte for byte

    # Closed once; a month not ended cannot close.
    capsys.readouterr()
    assert _run("period", "close", *MARCH, "--price-list", "public-eu", "--store", url) == 2
    assert capsys.readouterr().err.startswith(
        "tally period: period 2026-03 of cloud os-dev is already closed (at "
    )
    assert (
        _run(
            "period",
            "close",
            "--cloud",
            "os-dev",
            "--period",
            "2099-01",
            "--price-list",
            "public-eu",
            "--store",
            url,
        )
        == 2
    )
    assert capsys.readouterr().err.strip() == (
        "tally period: period 2099-01 of cloud os-dev has not ended (it ends at 2099-02-01T00:00:00Z)"
    )

    anyio.run(seed_store, url, late_events())
    assert (
        _run(
            "period",
            "correct",
            *MARCH,
            "--reason",
            "late notifications",
            "--sync-run",
            "run-7",
            "--store",
            url,
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "period 2026-03 of cloud os-dev: 3 correction lines" in out
    # vm-run deleted on the 11th: 108 h x 0.02 = 2.16 of the first version, all 7.13 of the second
    assert "  p-1: credit 9.29" in out
    assert "  p-3: debit 0.48" in out  # vm-late: 24 h x 0.02
    assert _run("period", "correct", *MARCH, "--store", url) == 0
    assert "0 correction lines" in capsys.readouterr().out  # recorded once

    again = tmp_path / "again.csv"
    assert _run("period", "show", *MARCH, "--store", url, "--out", str(again)) == 0
    assert again.read_bytes() == frozen.read_bytes()  # nothing of the closed lines changed
    fixes = tmp_path / "fixes.csv"
    assert _run("period", "show", *MARCH, "--corrections", "--store", url, "--out", str(fixes)) == 0
    rows = list(csv.DictReader(io.StringIO(fixes.read_text())))
    assert [
        (r["resource_id"], r["consumed_quantity"], r["cost"], r["reason"], r["sync_run"]) for r in rows
    ] == [
        ("vm-late", "24", "0.48", "late notifications", "run-7"),
        ("vm-run", "-108", "-2.16", "late notifications", "run-7"),
        ("vm-run", "-396", "-7.13", "late notifications", "run-7"),
    ]

    # The invariant: what March bills (its closed lines and their corrections) is its usage now.
    now_csv = tmp_path / "now.csv"
    assert (
        _run(
            "usage",
            *window[:4],
            "--cloud",
            "os-dev",
            "--price-list",
            str(EXAMPLE),
            "--store",
            url,
            "--out",
            str(now_csv),
        )
        == 0
    )
    billed: dict[str, Decimal] = {}
    for r in [*csv.DictReader(io.StringIO(frozen.read_text())), *rows]:
        billed[r["project_id"]] = billed.get(r["project_id"], Decimal(0)) + Decimal(r["cost"])
    measured: dict[str, Decimal] = {}
    for r in csv.DictReader(io.StringIO(now_csv.read_text())):
        measured[r["project_id"]] = measured.get(r["project_id"], Decimal(0)) + Decimal(r["cost"])
    assert billed == measured

    # The corrections reach the next FOCUS export as Correction rows, once.
    april = ["--from", "2026-04-01T00:00:00Z", "--to", "2026-05-01T00:00:00Z", "--cloud", "os-dev"]
    focus = [
        *april,
        "--price-list",
        str(EXAMPLE),
        "--format",
        "focus-csv",
        "--with-corrections",
        "--store",
        url,
    ]
    first, second = tmp_path / "april.csv", tmp_path / "april-again.csv"
    assert _run("usage", *focus, "--out", str(first)) == 0
    reader = csv.DictReader(io.StringIO(first.read_text()))
    delivered = list(reader)
    check_focus_rules(list(reader.fieldnames or []), delivered)
    columns = ("ChargeClass", "ResourceId", "BilledCost", "x_CorrectionReason", "x_CorrectionSyncRun")
    assert [tuple(r[c] for c in columns) for r in delivered] == [
        ("Correction", "vm-late", "0.48", "late notifications", "run-7"),
        ("Correction", "vm-run", "-2.16", "late notifications", "run-7"),
        ("Correction", "vm-run", "-7.13", "late notifications", "run-7"),
    ]  # fmt: skip
    assert delivered[1]["ChargePeriodStart"] == "2026-03-01T00:00:00Z"
    assert delivered[1]["BillingPeriodStart"] == "2026-04-01T00:00:00Z"
    assert _run("usage", *focus, "--out", str(second)) == 0
    assert list(csv.DictReader(io.StringIO(second.read_text()))) == []
