"""What ``tally simulate`` shows: the progress bar (or a log line off a terminal) and the summary table."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from tally.core import format_instant
from tally.simulator.compare import Comparison

from ._console_log import eta_s, format_eta
from ._run_state import RunProgress, SimulateResult

LOG_EVERY_S = 5.0


class ProgressView:
    """A rich progress bar on a terminal; elsewhere one line on stderr every few seconds."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._bar: Progress | None = None
        self._task: Any = None
        self._last = 0.0
        self._began = time.monotonic()

    def __enter__(self) -> ProgressView:
        if self._console.is_terminal:
            self._bar = Progress(
                TextColumn("[bold]publishing"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn(
                    "{task.fields[virtual]}  syncs {task.fields[syncs]}  corrections {task.fields[fixes]}"
                ),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=self._console,
                transient=True,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task("month", total=None, virtual="", syncs=0, fixes=0)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)

    def update(self, p: RunProgress) -> None:
        virtual = format_instant(p.virtual_now) if p.virtual_now else "-"
        fixes = sum(p.corrections.values())
        if self._bar is not None:
            self._bar.update(
                self._task, completed=p.published, total=p.total, virtual=virtual, syncs=p.syncs, fixes=fixes
            )
            return
        now = time.monotonic()
        if now - self._last >= LOG_EVERY_S:
            self._last = now
            eta = format_eta(eta_s(p.published, p.total or None, now - self._began))
            print(
                f"simulate published={p.published}/{p.total} virtual_now={virtual} syncs={p.syncs} "
                f"corrections={fixes} eta={eta}",
                file=sys.stderr,
                flush=True,
            )

    def callback(self) -> Callable[[RunProgress], None]:
        return self.update


def _seconds(value: float) -> str:
    return f"{value:+,.0f} s ({value / 3600:+,.2f} h)"


def _causes(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in counts.items()) or "none"


_UNITS = {"vcpu_h": "vCPU-h", "ram_gb_h": "RAM GB-h", "disk_gb_h": "disk GB-h", "gb_h": "GB-h", "hours": "h"}


def unit_label(resource_type: str, unit: str) -> str:
    label = _UNITS.get(unit, unit)
    return label if resource_type == "instance" else f"{resource_type} {label}"


def quantity_totals(comparison: Comparison) -> str:
    """The absolute error summed per unit over every line, the whole month on one row."""
    totals: dict[str, float] = {}
    for (rtype, _, unit), line in sorted(comparison.quantities.items()):
        label = unit_label(rtype, unit)
        totals[label] = totals.get(label, 0.0) + line.absolute
    return ", ".join(f"{k} {v:,.2f}" for k, v in totals.items()) or "none"


def summary_rows(result: SimulateResult) -> list[tuple[str, str]]:
    """The summary as (label, value) rows: the table, and the HTML report's head."""
    month, c, p = result.month, result.comparison, result.progress
    collector = result.ingest.get("collector")
    sync = result.ingest.get("reconciliation")
    rows = [
        (
            "month",
            f"seed {month.seed}, {format_instant(month.period_from)} .. {format_instant(month.period_to)}, "
            f"scale {month.scale:g}, cloud {month.cloud}",
        ),
        ("faults", ", ".join(sorted(month.faults)) or "none"),
        (
            "notifications published",
            f"{p.published:,} of {p.total:,} ({month.billable:,} billable, "
            f"{len(month.held_back):,} held back)",
        ),
        (
            "events accepted / duplicates / rejected",
            f"{collector.accepted if collector else 0:,} / {collector.duplicates if collector else 0:,} / "
            f"{collector.rejected if collector else 0:,}",
        ),
        (
            "syncs",
            f"{p.syncs:,} (every {result.sync_interval.total_seconds() / 60:g} virtual min; "
            f"{p.idle_skipped:,} skipped where nothing changed), {p.failed_syncs} not completed",
        ),
        (
            "corrections created / updated / deleted",
            f"{p.corrections['created']:,} / {p.corrections['updated']:,} / {p.corrections['deleted']:,}"
            f" (booked {sync.accepted if sync else 0:,})",
        ),
        ("deferred", ", ".join(f"{k} {v:,}" for k, v in sorted(p.deferred.items())) or "0"),
        ("resources exact / tolerated / off", f"{c.exact:,} / {c.tolerated:,} / {c.off:,}"),
        ("tolerated by cause", _causes(c.tolerated_by_cause)),
        ("off by cause", _causes(c.off_by_cause)),
        ("billed-seconds error", _seconds(c.seconds_off)),
        ("quantity error (absolute)", quantity_totals(c)),
        ("wall time", f"{result.wall_s:.1f} s"),
    ]
    if result.rejected_reasons:
        rows.insert(
            4,
            ("rejected by reason", ", ".join(f"{k} {v}" for k, v in sorted(result.rejected_reasons.items()))),
        )
    return rows


def summary_table(result: SimulateResult) -> Table:
    verdict = "[green]passed" if result.passed else "[red]FAILED"
    table = Table(title=f"tally simulate: {verdict}", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")
    for label, value in summary_rows(result):
        table.add_row(label, value)
    return table


def quantities_table(comparison: Comparison) -> Table:
    """The quantity-weighted error per type and size member: oracle, stored, signed and absolute."""
    table = Table(title="quantity-weighted error", title_justify="left")
    for column in ("type", "member", "unit", "oracle", "stored", "signed", "absolute"):
        table.add_column(column, justify="left" if column in ("type", "member", "unit") else "right")
    for (rtype, member, unit), line in sorted(comparison.quantities.items()):
        table.add_row(
            rtype,
            member or "-",
            unit_label(rtype, unit),
            f"{line.oracle:,.2f}",
            f"{line.stored:,.2f}",
            f"{line.signed:+,.2f}",
            f"{line.absolute:,.2f}",
        )
    return table


def differences_table(comparison: Comparison, *, limit: int = 20) -> Table:
    table = Table(title="resources that differ", title_justify="left")
    for column in ("type", "id", "from", "to", "fields", "verdict"):
        table.add_column(column)
    shown = 0
    for r in comparison.resources:
        for d in r.differences:
            if shown >= limit:
                break
            table.add_row(
                r.resource_type,
                r.resource_id,
                format_instant(d.start),
                format_instant(d.end),
                ",".join(d.fields),
                d.note() if d.tolerated else f"[red]{d.note()}",
            )
            shown += 1
    return table
