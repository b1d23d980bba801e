"""``tally simulate``'s handler: the month generated from the arguments, run through the pipeline with
a progress view, then the summary, the quantities, the usage check and the differences printed, and
the optional JSON document and HTML report written; exit 0 only if everything passed."""

from __future__ import annotations

import argparse
from datetime import timedelta
from pathlib import Path
from typing import Any

from rich.console import Console

from tally.config import Settings

from ._command_support import fail, month_of_args, output_console
from ._console_log import simulator_logging
from .clock import ClockError
from .faults import FaultError
from .files import write_month
from .generator import GeneratorError
from .usage_check import summary_lines


async def simulate_command(args: argparse.Namespace) -> int:
    from .publisher import PublishError, check_broker
    from .report import render_report, write_report
    from .simulate import SimulateError, SimulateOptions, simulate
    from .summary import ProgressView, differences_table, quantities_table, summary_rows, summary_table

    settings = Settings()
    try:
        month = month_of_args(args, settings)
        if args.sync_interval <= 0:
            raise ValueError(f"--sync-interval {args.sync_interval} must be above 0 minutes")
        if args.amqp_url:
            check_broker(args.amqp_url, allow_remote=args.allow_remote_broker)
        if args.json is not None and not args.json.parent.is_dir():
            raise ValueError(f"--json {args.json}: the directory {args.json.parent} does not exist")
        if args.out is not None:
            write_month(month, args.out)
    except (GeneratorError, FaultError, ClockError, PublishError, ValueError, OSError) as exc:
        return fail("simulate", exc)
    options = SimulateOptions(
        seed=args.seed,
        period=args.period,
        scale=args.scale,
        days=args.days,
        faults=month.faults,
        factor=args.factor,
        sync_interval=timedelta(minutes=args.sync_interval),
        cloud=month.cloud,
        store_url=args.store_url,
        amqp_url=args.amqp_url,
        allow_remote_broker=args.allow_remote_broker,
        queue_name=args.queue_name,
        skip_idle=not args.every_sync,
        state_dir=args.state_dir,
    )
    console = output_console()
    try:
        with simulator_logging(args.faults), ProgressView(Console(stderr=True)) as view:
            result = await simulate(options, month=month, on_progress=view.callback())
    except (PublishError, SimulateError) as exc:
        return fail("simulate", exc)
    if args.json is not None:
        _write_json(args.json, result.to_doc())
    console.print(summary_table(result))
    console.print(quantities_table(result.comparison))
    for line in summary_lines(result.usage):
        console.print(line, highlight=False)
    if result.comparison.resources:
        console.print(differences_table(result.comparison))
    if args.report is not None:
        document = render_report(
            result.comparison,
            month.oracle,
            result.stored,
            title=f"tally simulate: seed {month.seed}, {month.period}",
            summary=summary_rows(result),
        )
        write_report(args.report, document)
        console.print(f"report written to {args.report}", highlight=False)
    return 0 if result.passed else 1


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    import orjson

    # Whole or not at all: a reader (the accuracy benchmark) never sees half a document.
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    partial.replace(path)
