"""``tally simulate`` and ``tally simulator run | replay | compare``.

``register`` adds the top-level ``simulate`` (listed in the daemon's ``COMMAND_MODULES``);
``register_simulator`` adds ``run``, ``replay`` and ``compare`` under ``tally simulator`` (listed in
that group's ``SUBCOMMAND_MODULES``). Bad input (a period that has not ended, an unknown fault, a
forbidden pair, an oracle of another format, a broken notifications line) is one line on stderr
and exit 2, with nothing half-written. Each handler imports the pieces it runs (the pipeline, aio-pika,
the OTLP exporter), so building the ``tally`` parser stays cheap.
"""

from __future__ import annotations

import argparse
import logging
import re
import signal
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console

from tally.config import Settings
from tally.rating import PriceListError, RatedExportError, RatingError, load_price_list, read_rated
from tally.usage import ExportError, read_export

from ._console_log import ThrottledLine, simulator_logging
from .clock import ClockError, PublishProgress, VirtualClock
from .compare import Comparison, compare
from .faults import FAULTS, FaultError, parse_faults
from .files import NotificationFileError, write_month
from .generator import GeneratorError, Month, generate_month
from .oracle import Oracle, OracleError, read_oracle
from .rated_check import RatedCheck, check_rated, rated_summary
from .usage_check import check_usage, summary_lines

log = logging.getLogger(__name__)

MAX_SEED = 2**64 - 1
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")


def duration(text: str) -> timedelta:
    """``90s``, ``5m``, ``1h`` or plain seconds."""
    match = _DURATION.match(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration like 30s, 5m or 1h")
    value, unit = float(match.group(1)), match.group(2) or "s"
    return timedelta(seconds=value * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit])


def _faults_help() -> str:
    return "comma-separated notification faults: " + ", ".join(FAULTS)


def _month_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=1, help="the month's seed (default 1)")
    parser.add_argument("--period", required=True, metavar="YYYY-MM", help="the month; it must have ended")
    parser.add_argument(
        "--scale", type=float, default=1.0, help="tenant multiplier (below 1: a smaller month)"
    )
    parser.add_argument("--days", type=int, default=None, help="only the first N days of the period")
    parser.add_argument("--faults", default="", help=_faults_help())
    parser.add_argument("--cloud", default=None, help="the simulated cloud's name (TALLY_SIM_CLOUD)")
    parser.add_argument(
        "--factor",
        type=float,
        default=744.0,
        help="virtual seconds per wall second (default 744; 0 = at once)",
    )


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "simulate",
        help="run a simulated month through the whole pipeline and compare it with its oracle",
        description="Generate a month, publish it, collect, ingest and reconcile it against a fake cloud, "
        "then compare the store with the oracle. Exit 0 only if the comparison passes.",
    )
    _month_arguments(p)
    p.add_argument(
        "--sync-interval",
        type=float,
        default=60.0,
        metavar="MINUTES",
        help="virtual minutes between syncs (default 60)",
    )
    p.add_argument(
        "--store-url",
        default=None,
        help="a store URL (default: TALLY_REPORTING_DB_URL, as for tally run; else SQLite in the state dir)",
    )
    p.add_argument(
        "--amqp-url", default=None, help="publish through this RabbitMQ (default: the in-process bus)"
    )
    p.add_argument("--allow-remote-broker", action="store_true", help="allow a broker not on loopback")
    p.add_argument("--queue-name", default="tally-simulate", help="the collector's queue on --amqp-url")
    p.add_argument(
        "--every-sync",
        action="store_true",
        help="lockstep: sync at every interval, also where nothing changed since the last sync",
    )
    p.add_argument(
        "--state-dir", type=Path, default=None, help="keep the store and outbox here (default: temp)"
    )
    p.add_argument("--report", type=Path, default=None, metavar="FILE.html", help="write an HTML report")
    p.add_argument("--out", type=Path, default=None, metavar="DIR", help="also write the month's files here")
    p.add_argument(
        "--json",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write the run and its comparison as one JSON document",
    )
    p.set_defaults(handler=simulate_command)


def register_simulator(sub: Any) -> None:
    run = sub.add_parser("run", help="publish a month to RabbitMQ (or write its files) with the fake cloud")
    _month_arguments(run)
    run.add_argument("--out", type=Path, default=None, metavar="DIR", help="write the month's files here")
    run.add_argument(
        "--register-projects", action="store_true", help="register the tenants with the Reporting API first"
    )
    run.add_argument(
        "--metrics-interval", type=duration, default=timedelta(minutes=5), help="OTLP push interval"
    )
    run.add_argument(
        "--wait-for-collector",
        type=duration,
        default=timedelta(0),
        help="after publishing, wait up to this long until the collector's queue is empty",
    )
    run.add_argument("--allow-remote-broker", action="store_true", help="allow a broker not on loopback")
    run.set_defaults(handler=run_command)

    rp = sub.add_parser("replay", help="publish a notifications.jsonl file to RabbitMQ again")
    rp.add_argument("--in", dest="input", type=Path, required=True, help="notifications.jsonl of a run")
    rp.add_argument(
        "--factor", type=float, default=0.0, help="pace by the envelopes' timestamps (0 = at once)"
    )
    rp.add_argument("--allow-remote-broker", action="store_true", help="allow a broker not on loopback")
    rp.set_defaults(handler=replay_command)

    cp = sub.add_parser(
        "compare", help="compare an oracle with the stored lifecycle intervals; exit 1 if off"
    )
    cp.add_argument("--oracle", type=Path, required=True, help="oracle.json (format 3)")
    source = cp.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--api",
        default=None,
        metavar="URL",
        help="refused: the Reporting API serves no sync runs to judge by",
    )
    source.add_argument("--store-url", default=None, help="a store URL (sqlite:///... or postgresql://...)")
    cp.add_argument("--token", default=None, help="admin API token for --api (default TALLY_SIM_API_TOKEN)")
    cp.add_argument(
        "--settle",
        type=int,
        default=60,
        metavar="SECONDS",
        help="the settle window the runs were told (TALLY_REPORTING_SYNC_SETTLE_S; default 60)",
    )
    cp.add_argument(
        "--scale",
        type=float,
        default=None,
        help="the month's scale: regenerate its world to learn the platform's creation instants",
    )
    cp.add_argument("--json", action="store_true", help="print the comparison as JSON")
    cp.add_argument(
        "--usage",
        type=Path,
        default=None,
        metavar="FILE",
        help="also check this per-resource usage export (tally usage, CSV or JSON) against the oracle",
    )
    cp.add_argument(
        "--export",
        type=Path,
        default=None,
        metavar="FILE",
        help="also judge this rated export (tally usage --price-list, CSV or JSON), quantities and costs",
    )
    cp.add_argument(
        "--price-list",
        dest="price_list",
        type=Path,
        default=None,
        metavar="FILE",
        help="the price list (YAML) the --export was rated with",
    )
    cp.set_defaults(handler=compare_command)


def _console() -> Console:
    # Off a terminal rich would wrap at 80 columns; a log or a pipe reads better unwrapped.
    return Console() if sys.stdout.isatty() else Console(width=160)


def _fail(command: str, message: object) -> int:
    print(f"tally {command}: {message}", file=sys.stderr)
    return 2


def _generate(args: argparse.Namespace, settings: Settings) -> Month:
    if args.factor < 0:
        raise ClockError(f"factor {args.factor} must not be negative")
    if not 0 <= args.seed <= MAX_SEED:
        # The oracle and the files carry the seed as a JSON integer, 64 bits unsigned at most.
        raise GeneratorError(f"seed {args.seed} is out of range: 0 to {MAX_SEED}")
    faults = parse_faults(args.faults)
    return generate_month(
        args.seed,
        args.period,
        scale=args.scale,
        cloud=args.cloud or settings.sim_cloud,
        faults=faults,
        days=args.days,
    )


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


async def simulate_command(args: argparse.Namespace) -> int:
    from .publisher import PublishError, check_broker
    from .report import render_report, write_report
    from .simulate import SimulateError, SimulateOptions, simulate
    from .summary import ProgressView, differences_table, quantities_table, summary_rows, summary_table

    settings = Settings()
    try:
        month = _generate(args, settings)
        if args.sync_interval <= 0:
            raise ValueError(f"--sync-interval {args.sync_interval} must be above 0 minutes")
        if args.amqp_url:
            check_broker(args.amqp_url, allow_remote=args.allow_remote_broker)
        if args.json is not None and not args.json.parent.is_dir():
            raise ValueError(f"--json {args.json}: the directory {args.json.parent} does not exist")
        if args.out is not None:
            write_month(month, args.out)
    except (GeneratorError, FaultError, ClockError, PublishError, ValueError, OSError) as exc:
        return _fail("simulate", exc)
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
    console = _console()
    try:
        with simulator_logging(args.faults), ProgressView(Console(stderr=True)) as view:
            result = await simulate(options, month=month, on_progress=view.callback())
    except (PublishError, SimulateError) as exc:
        return _fail("simulate", exc)
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


async def run_command(args: argparse.Namespace) -> int:
    from .publisher import PublishError, check_broker
    from .register import RegisterError, register_projects

    settings = Settings()
    amqp = settings.sim_amqp_url.get_secret_value() if settings.sim_amqp_url else None
    try:
        month = _generate(args, settings)
        if amqp is None and args.out is None:
            raise ValueError("without TALLY_SIM_AMQP_URL the run only writes files, and needs --out DIR")
        if amqp is not None:
            check_broker(amqp, allow_remote=args.allow_remote_broker)
        if args.register_projects and (not settings.sim_reporting_url or settings.sim_api_token is None):
            raise ValueError("--register-projects needs TALLY_SIM_REPORTING_URL and TALLY_SIM_API_TOKEN")
        if args.register_projects and settings.sim_cloud == settings.sim_garden_cloud:
            raise ValueError("TALLY_SIM_GARDEN_CLOUD must differ from TALLY_SIM_CLOUD")
        if args.out is not None:
            written = write_month(month, args.out)
            print(f"wrote {', '.join(str(p) for p in written.values())}", flush=True)
    except (GeneratorError, FaultError, ClockError, PublishError, ValueError, OSError) as exc:
        return _fail("simulator run", exc)
    if amqp is None:
        return 0
    if args.register_projects:
        assert settings.sim_reporting_url is not None and settings.sim_api_token is not None
        try:
            await register_projects(
                settings.sim_reporting_url,
                settings.sim_api_token.get_secret_value(),
                month.tenants,
                cloud=month.cloud,
                garden_cloud=settings.sim_garden_cloud,
                valid_from=month.period_from,
            )
        except (RegisterError, OSError) as exc:
            return _fail("simulator run", exc)
    return await _publish_month(month, amqp, args, settings)


async def _publish_month(month: Month, amqp: str, args: argparse.Namespace, settings: Settings) -> int:
    from .fakecloud import create_fake_cloud_app, serve_fake_cloud
    from .otlp import OtlpPush
    from .publisher import AmqpSink, Publisher, PublishError, add_release_route, redact

    clock = VirtualClock(month.period_from, 0.0)
    progress = PublishProgress()
    app = create_fake_cloud_app(month.world, clock, progress=progress)
    try:
        async with AmqpSink(amqp, allow_remote=args.allow_remote_broker) as sink:
            publisher = Publisher(month.notifications, month.held_back, sink, clock, progress)
            add_release_route(app, publisher)
            push = (
                OtlpPush(
                    settings.sim_otlp_endpoint,
                    month.oracle,
                    month.world,
                    clock.now,
                    interval_s=args.metrics_interval.total_seconds(),
                )
                if settings.sim_otlp_endpoint
                else None
            )
            async with anyio.create_task_group() as tg:
                port = await tg.start(serve_fake_cloud, app, settings.sim_http_addr, settings.sim_http_port)
                print(
                    f"fake cloud and control endpoint on http://{settings.sim_http_addr}:{port}", flush=True
                )
                tg.start_soon(_stop_on_signal, tg.cancel_scope)
                clock.rebase(args.factor)
                await publisher.publish_paced()
                if publisher.progress.holding:
                    print(f"holding {len(month.held_back)} notifications until POST /release", flush=True)
                    await publisher.released_event.wait()
                if args.wait_for_collector > timedelta(0):
                    await _wait_for_queue(amqp, settings.osc_queue_name, args.wait_for_collector)
                tg.cancel_scope.cancel()
            if push is not None:
                push.shutdown()
    except PublishError as exc:
        return _fail("simulator run", exc)
    print(f"published {progress.published} of {progress.total} to {redact(amqp)}", flush=True)
    return 0


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            scope.cancel()
            return


async def _wait_for_queue(url: str, queue: str, limit: timedelta) -> None:
    from tally.collector._amqp import queue_statistics

    with anyio.move_on_after(limit.total_seconds()):
        while True:
            stats = await queue_statistics(url, queue)
            if stats is not None and stats[0] == 0:
                log.info("collector queue drained queue=%s", queue)
                return
            await anyio.sleep(1.0)
    log.warning("collector queue not drained within %s queue=%s", limit, queue)


async def replay_command(args: argparse.Namespace) -> int:
    from .publisher import AmqpSink, PublishError, check_broker, redact
    from .replay import read_lines, replay

    settings = Settings()
    try:
        if args.factor < 0:
            raise ValueError(f"factor {args.factor} must not be negative")
        if settings.sim_amqp_url is None:
            raise ValueError("replay publishes to RabbitMQ: set TALLY_SIM_AMQP_URL")
        amqp = settings.sim_amqp_url.get_secret_value()
        check_broker(amqp, allow_remote=args.allow_remote_broker)
        lines = read_lines(args.input)
    except (NotificationFileError, PublishError, ValueError, OSError) as exc:
        return _fail("simulator replay", exc)
    try:
        shown = ThrottledLine(lambda sent, total, eta: f"replay published={sent}/{total} eta={eta}")
        async with AmqpSink(amqp, allow_remote=args.allow_remote_broker) as sink:
            sent = await replay(
                lines,
                sink,
                factor=args.factor,
                on_progress=lambda sent, total: shown.update(sent, total, final=sent == total),
            )
    except PublishError as exc:
        return _fail("simulator replay", exc)
    print(f"replayed {sent} notifications to {redact(amqp)}", flush=True)
    return 0


def _platform_instants(oracle: Oracle, scale: float | None) -> dict[tuple[str, str], datetime] | None:
    """The world's creation instants when ``scale`` regenerates exactly this oracle's month."""
    from ._platform import platform_created

    if scale is None:
        return None
    days = (oracle.period_to - oracle.period_from).days
    month = generate_month(
        oracle.seed,
        f"{oracle.period_from:%Y-%m}",
        scale=scale,
        cloud=oracle.cloud,
        faults=oracle.faults,
        days=days,
    )
    if month.oracle.to_json() != oracle.to_json():
        raise ValueError(
            f"--scale {scale:g} does not regenerate this oracle (seed {oracle.seed}, cloud {oracle.cloud}); "
            "pass the scale the month was generated with"
        )
    return platform_created(month.world)


async def compare_command(args: argparse.Namespace) -> int:
    from .stored import StoredReadError, record_from_api, record_from_store_url

    settings = Settings()
    console = _console()
    try:
        if args.settle < 0:
            raise ValueError(f"--settle {args.settle} must not be negative")
        oracle = read_oracle(args.oracle.read_bytes())
        if oracle.period_to > datetime.now(UTC):
            raise ValueError(
                f"the oracle's period ends at {oracle.period_to.isoformat()}, which has not passed: "
                "compare a month that has ended"
            )
        created = _platform_instants(oracle, args.scale)
    except (OracleError, GeneratorError, FaultError, OSError, ValueError) as exc:
        return _fail("simulator compare", exc)
    try:
        if args.api:
            token = args.token or (
                settings.sim_api_token.get_secret_value() if settings.sim_api_token else None
            )
            record = await record_from_api(args.api, token, oracle.cloud)
        else:
            record = await record_from_store_url(args.store_url, oracle.cloud)
    except StoredReadError as exc:
        return _fail("simulator compare", exc)
    comparison = compare(oracle, record, settle=timedelta(seconds=args.settle), platform_created=created)
    usage = None
    rated: RatedCheck | None = None
    try:
        if args.usage is not None:
            usage = check_usage(oracle, read_export(args.usage.read_bytes()), comparison)
        if args.export is not None:
            rated = _rated(args, oracle, comparison)
    except (ExportError, RatedExportError, PriceListError, RatingError, OSError) as exc:
        return _fail("simulator compare", exc)
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
