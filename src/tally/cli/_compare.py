"""``tally simulator compare``: an oracle judged against a store or the Reporting API, and optionally a
usage export and a rated export with its price list; the differences printed, exit 1 when off."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime, timedelta

from rich.console import Console

from tally.config import Settings
from tally.rating import PriceListError, RatedExportError, RatingError, load_price_list, read_rated
from tally.simulation.rated_check import RatedCheck, check_rated, rated_summary
from tally.simulation.usage_check import check_usage, summary_lines
from tally.simulator.compare import Comparison, compare
from tally.simulator.oracle import Oracle, OracleError, read_oracle
from tally.usage import ExportError, read_export

from ._refuse import fail
from ._simulator_support import output_console


def print_differences(comparison: Comparison, console: Console, *, limit: int = 50) -> None:
    for shown, r in enumerate(comparison.resources, start=1):
        verdict = "tolerated" if r.tolerated else "OFF"
        console.print(
            f"{r.resource_type} {r.resource_id}: {verdict} ({', '.join(r.causes)}); billed seconds oracle "
            f"{r.oracle_seconds:,.0f} stored {r.stored_seconds:,.0f}",
            highlight=False,
        )
        for d in r.differences:
            console.print(
                f"  {d.start.isoformat()} .. {d.end.isoformat()}: {', '.join(d.fields)} ({d.note()})",
                highlight=False,
            )
        if shown >= limit:
            console.print(f"... and {len(comparison.resources) - shown} more", highlight=False)
            break
    for rtype in sorted(set(comparison.oracle_seconds) | set(comparison.stored_seconds)):
        o, s = comparison.oracle_seconds.get(rtype, 0.0), comparison.stored_seconds.get(rtype, 0.0)
        console.print(
            f"billed seconds {rtype}: oracle {o:,.0f} stored {s:,.0f} off {s - o:+,.0f}", highlight=False
        )
    for (rtype, member, unit), line in sorted(comparison.quantities.items()):
        if line.absolute:
            console.print(
                f"quantity {rtype} {member or '-'} {unit}: oracle {line.oracle:,.2f} "
                f"stored {line.stored:,.2f} signed {line.signed:+,.2f} absolute {line.absolute:,.2f}",
                highlight=False,
            )
    causes = ", ".join(f"{k} {v}" for k, v in comparison.off_by_cause.items())
    console.print(
        f"{'passed' if comparison.passed else 'FAILED'}: {comparison.exact} exact, "
        f"{comparison.tolerated} tolerated (corrections the seeds date at a run's poll, checked against "
        f"{comparison.runs} sync runs, settle {comparison.settle.total_seconds():g} s), {comparison.off} off"
        + (f" ({causes})" if causes else ""),
        highlight=False,
    )


async def compare_command(args: argparse.Namespace) -> int:
    from tally.simulation.stored import StoredReadError, record_from_api, record_from_store_url

    settings = Settings()
    console = output_console()
    try:
        if args.settle < 0:
            raise ValueError(f"--settle {args.settle} must not be negative")
        oracle = read_oracle(args.oracle.read_bytes())
        if oracle.period_to > datetime.now(UTC):
            raise ValueError(
                f"the oracle's period ends at {oracle.period_to.isoformat()}, which has not passed: "
                "compare a month that has ended"
            )
    except (OracleError, OSError, ValueError) as exc:
        return fail("simulator compare", exc)
    try:
        if args.api:
            token = args.token or (
                settings.sim_api_token.get_secret_value() if settings.sim_api_token else None
            )
            record = await record_from_api(args.api, token, oracle.cloud)
        else:
            record = await record_from_store_url(args.store_url, oracle.cloud)
    except StoredReadError as exc:
        return fail("simulator compare", exc)
    comparison = compare(
        oracle, record, settle=timedelta(seconds=args.settle), platform_created=oracle.platform_instants()
    )
    usage = None
    rated: RatedCheck | None = None
    try:
        if args.usage is not None:
            usage = check_usage(oracle, read_export(args.usage.read_bytes()), comparison)
        if args.export is not None:
            rated = _rated(args, oracle, comparison)
    except (ExportError, RatedExportError, PriceListError, RatingError, OSError) as exc:
        return fail("simulator compare", exc)
    if args.json:
        import orjson

        doc = comparison.to_doc() | ({"usage_export": usage.to_doc()} if usage is not None else {})
        doc |= {"rated_export": rated.to_doc()} if rated is not None else {}
        sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print_differences(comparison, console)
        for line in summary_lines(usage) if usage is not None else []:
            console.print(line, highlight=False)
        for line in rated_summary(rated) if rated is not None else []:
            console.print(line, highlight=False)
    checks = (comparison.passed, usage is None or usage.passed, rated is None or rated.check.passed)
    return 0 if all(checks) else 1


def _rated(args: argparse.Namespace, oracle: Oracle, comparison: Comparison) -> RatedCheck:
    if args.price_list is None:
        raise PriceListError("--price-list", "--export needs the price list it was rated with")
    price_list = load_price_list(args.price_list.read_text(encoding="utf-8"))
    return check_rated(oracle, read_rated(args.export.read_bytes()), price_list, comparison)
