"""``tally simulate`` and ``tally simulator run | replay | compare``.

``register`` adds the top-level ``simulate`` (listed in the command line's ``COMMANDS``);
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
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio

from tally.config import Settings
from tally.simulation import ThrottledLine
from tally.simulator.clock import ClockError, PublishProgress, VirtualClock
from tally.simulator.faults import FAULTS, FaultError
from tally.simulator.files import NotificationFileError, write_month
from tally.simulator.generator import GeneratorError, Month

from ._compare import compare_command
from ._refuse import fail
from ._simulate_month import simulate_command
from ._simulator_support import month_of_args

# The logger of these lines before the command moved here: the name log filters already know.
log = logging.getLogger("tally.simulator.run_commands")

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
    p.add_argument(
        "--price-list",
        dest="price_list",
        type=Path,
        default=None,
        metavar="FILE",
        help="end with the invoice: rate the month by this price list (YAML) and judge it by the oracle's",
    )
    p.add_argument(
        "--invoice",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the invoice (the rated lines; JSON with the totals per project when FILE ends .json, "
        "else CSV) here; needs --price-list",
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
    cp.add_argument("--oracle", type=Path, required=True, help="oracle.json (format 4)")
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


async def run_command(args: argparse.Namespace) -> int:
    from tally.simulation.publisher import PublishError, check_broker
    from tally.simulation.register import RegisterError, register_projects

    settings = Settings()
    amqp = settings.sim_amqp_url.get_secret_value() if settings.sim_amqp_url else None
    try:
        month = month_of_args(args, settings)
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
        return fail("simulator run", exc)
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
            return fail("simulator run", exc)
    return await _publish_month(month, amqp, args, settings)


async def _publish_month(month: Month, amqp: str, args: argparse.Namespace, settings: Settings) -> int:
    from tally.simulation import serve_fake_cloud
    from tally.simulation.otlp import OtlpPush
    from tally.simulation.publisher import AmqpSink, Publisher, PublishError, add_release_route, redact
    from tally.simulator.fakecloud import create_fake_cloud_app

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
        return fail("simulator run", exc)
    print(f"published {progress.published} of {progress.total} to {redact(amqp)}", flush=True)
    return 0


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            scope.cancel()
            return


async def _wait_for_queue(url: str, queue: str, limit: timedelta) -> None:
    from tally.collector import queue_statistics

    with anyio.move_on_after(limit.total_seconds()):
        while True:
            stats = await queue_statistics(url, queue)
            if stats is not None and stats[0] == 0:
                log.info("collector queue drained queue=%s", queue)
                return
            await anyio.sleep(1.0)
    log.warning("collector queue not drained within %s queue=%s", limit, queue)


async def replay_command(args: argparse.Namespace) -> int:
    from tally.simulation.publisher import AmqpSink, PublishError, check_broker, redact
    from tally.simulation.replay import read_lines, replay

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
        return fail("simulator replay", exc)
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
        return fail("simulator replay", exc)
    print(f"replayed {sent} notifications to {redact(amqp)}", flush=True)
    return 0
