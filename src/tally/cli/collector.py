"""``tally collector``: the collector standalone, its sink and collector from the composition root, its
own health endpoints, or ``--dump``; its subcommands are in ``collector_map``, ``dead_letters`` and
``definitions``."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from typing import Any

import anyio

from tally.collector import CollectorError, amqp_config, redact_url, run_dump
from tally.config import ConfigError, Settings, load_settings, setup_logging
from tally.outbox import SinkConfigError

from . import collector_map, dead_letters, definitions

# The logger of these lines before the command moved here: the name log filters already know.
log = logging.getLogger("tally.collector.commands")


def register(subparsers: Any) -> None:
    """Add ``tally collector`` and its subcommands."""
    parser = subparsers.add_parser(
        "collector",
        help="consume oslo notifications into the outbox and deliver them",
        description="Run the collector (TALLY_OSC_* settings), dump deliveries, or map captured bodies.",
    )
    parser.add_argument(
        "--dump", action="store_true", help="print deliveries (credentials redacted), book nothing"
    )
    parser.add_argument(
        "--count", type=int, default=None, help="with --dump: stop after this many deliveries"
    )
    sub = parser.add_subparsers(dest="collector_command", metavar="SUBCOMMAND")
    collector_map.register(sub)
    dead_letters.register(sub)
    definitions.register(sub)
    parser.set_defaults(handler=run_collector_command)


async def dump(settings: Settings, count: int | None) -> int:
    """``tally collector --dump``: print deliveries (credentials redacted), book nothing."""
    config = amqp_config(settings)
    if config is None:
        raise CollectorError("--dump needs TALLY_OSC_AMQP_URL")
    return await run_dump(config, lambda line: print(line, flush=True), count=count)


async def run_collector_command(args: argparse.Namespace) -> int:
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"tally collector: error: {exc}", file=sys.stderr)
        return 2
    setup_logging(settings.log_level, settings.log_format)
    try:
        if args.dump:
            return await dump(settings, args.count)
        from tally.app import collector as build_collector
        from tally.app import open_standalone_sink
        from tally.daemon import collector_checks, standalone_app
        from tally.http import Readiness, serve_quart

        async with open_standalone_sink(settings) as sink:
            collector = build_collector(settings, sink=sink)
            readiness = Readiness()
            collector_checks(readiness, lambda: collector)
            async with anyio.create_task_group() as tg:
                await tg.start(collector.serve)
                await readiness.refresh("outbox")  # its outcome of the opened outbox
                tg.start_soon(readiness.run)
                app = standalone_app(collector, readiness, metrics_enabled=settings.metrics_enabled)
                port = await tg.start(serve_quart, app, settings.osc_http_addr, settings.osc_http_port)
                log.info(
                    "collector: running amqp=%s http=%s:%d outbox=%s",
                    redact_url(settings.osc_amqp_url.get_secret_value()) if settings.osc_amqp_url else "-",
                    settings.osc_http_addr,
                    port,
                    settings.outbox_path,
                )
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for signum in signals:
                        log.info("collector: stopping signal=%s", signal.Signals(signum).name)
                        await collector.stop(settings.shutdown_grace_s)
                        tg.cancel_scope.cancel()
                        break
    except (CollectorError, SinkConfigError) as exc:
        print(f"tally collector: error: {exc}", file=sys.stderr)
        return 2
    except BaseExceptionGroup as group:
        found = _config_error(group)
        if found is None:
            raise
        print(f"tally collector: error: {found}", file=sys.stderr)
        return 2
    return 0


def _config_error(error: BaseException) -> BaseException | None:
    """The configuration error a task group wrapped, if that is what stopped the collector."""
    if isinstance(error, CollectorError | SinkConfigError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _config_error(inner)
            if found is not None:
                return found
    return None
