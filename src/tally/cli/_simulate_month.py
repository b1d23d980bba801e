"""``tally simulate``'s handler: the month generated from the arguments, run through the pipeline with
a progress view, then the summary, the quantities, the usage check and the differences printed, and
the optional JSON document and HTML report written. With a price list the month ends with its invoice:
rated as ``tally usage --price-list`` rates it, judged line by line against the oracle's month rated by
the same list, the total per project printed for both, and written with ``--invoice``. Exit 0 only if
everything passed."""

from __future__ import annotations

import argparse
from datetime import timedelta
from pathlib import Path
from typing import Any

from rich.console import Console

from tally.config import Settings
from tally.rating import PriceList, PriceListError, RatingError, load_price_list
from tally.simulation import simulator_logging
from tally.simulation.rated_check import rated_summary
from tally.simulation.usage_check import summary_lines
from tally.simulator.clock import ClockError
from tally.simulator.faults import FaultError
from tally.simulator.files import write_month
from tally.simulator.generator import GeneratorError

from ._refuse import fail
from ._simulator_support import month_of_args, output_console


async def simulate_command(args: argparse.Namespace) -> int:
    from tally.simulation.publisher import PublishError, check_broker
    from tally.simulation.report import render_report, write_report
    from tally.simulation.simulate import SimulateError, SimulateOptions, simulate
    from tally.simulation.summary import (
        ProgressView,
        differences_table,
        quantities_table,
        summary_rows,
        summary_table,
    )

    settings = Settings()
    try:
        month = month_of_args(args, settings)
        if args.sync_interval <= 0:
            raise ValueError(f"--sync-interval {args.sync_interval} must be above 0 minutes")
        if args.amqp_url:
            check_broker(args.amqp_url, allow_remote=args.allow_remote_broker)
        if args.json is not None and not args.json.parent.is_dir():
            raise ValueError(f"--json {args.json}: the directory {args.json.parent} does not exist")
        price_list = _price_list(args)
        if args.out is not None:
            write_month(month, args.out)
    except (GeneratorError, FaultError, ClockError, PublishError, PriceListError, ValueError, OSError) as exc:
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
        price_list=price_list,
        invoice_format="json" if args.invoice is not None and args.invoice.suffix == ".json" else "csv",
    )
    console = output_console()
    try:
        with simulator_logging(args.faults), ProgressView(Console(stderr=True)) as view:
            result = await simulate(options, month=month, on_progress=view.callback())
    except (PublishError, SimulateError, RatingError) as exc:
        # RatingError: the month holds a flavor or state the price list cannot place.
        return fail("simulate", exc)
    if args.json is not None:
        _write_json(args.json, result.to_doc())
    console.print(summary_table(result))
    console.print(quantities_table(result.comparison))
    for line in summary_lines(result.usage):
        console.print(line, highlight=False)
    for line in rated_summary(result.rated) if result.rated is not None else []:
        console.print(line, highlight=False)
    if args.invoice is not None and result.invoice is not None:
        args.invoice.write_bytes(result.invoice)
        console.print(f"invoice written to {args.invoice}", highlight=False)
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


def _price_list(args: argparse.Namespace) -> PriceList | None:
    """The checked price list of ``--price-list``; ``--invoice`` alone is refused before anything runs."""
    if args.invoice is not None:
        if args.price_list is None:
            raise ValueError(f"--invoice {args.invoice}: an invoice is rated, give --price-list")
        if not args.invoice.parent.is_dir():
            raise ValueError(f"--invoice {args.invoice}: the directory {args.invoice.parent} does not exist")
    if args.price_list is None:
        return None
    try:
        return load_price_list(args.price_list.read_text(encoding="utf-8"))
    except PriceListError as exc:
        raise PriceListError(str(args.price_list), str(exc)) from None
