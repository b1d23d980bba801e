"""``tally collector``: run the collector standalone, dump deliveries, map captured bodies, list and
replay the dead letters, or print the broker definitions that keep its bindings across restarts."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from tally.config import ConfigError, Settings, load_settings, setup_logging
from tally.http import serve_quart
from tally.outbox import EventSink, HttpSink, IngestSink, SinkConfigError

from . import _dead_letter_commands, _definitions
from ._amqp import redact_url
from ._dump import run_dump
from ._errors import CollectorError
from ._health import create_health_app
from ._mapping import map_notification
from ._outcome import Mapped, Skipped
from ._service import Collector, amqp_config

log = logging.getLogger(__name__)


def register(subparsers: Any) -> None:
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
    parser.set_defaults(handler=run_collector_command)
    sub = parser.add_subparsers(dest="collector_command", metavar="SUBCOMMAND")
    mapper = sub.add_parser(
        "map",
        help="print the canonical events captured notification bodies map to",
        description="Each FILE holds one body, or JSON lines of bodies or of {exchange, routing_key, body}.",
    )
    mapper.add_argument("files", nargs="+", type=Path, metavar="FILE")
    mapper.add_argument("--cloud", default=None, help="the cloud to stamp (default TALLY_OSC_CLOUD)")
    mapper.set_defaults(handler=map_command)
    _dead_letter_commands.register(sub)
    _definitions.register(sub)


def _bodies(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, body) for every body the file holds."""
    text = path.read_bytes()
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    else:
        yield str(path), _unwrap_capture(whole)
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            yield f"{path}:{number}", line
            continue
        yield f"{path}:{number}", _unwrap_capture(item)


def _unwrap_capture(item: Any) -> Any:
    if isinstance(item, dict) and "body" in item and "routing_key" in item:
        return item["body"]
    return item


def map_command(args: argparse.Namespace) -> int:
    try:
        cloud = args.cloud or load_settings().osc_cloud
    except ConfigError as exc:
        print(f"tally collector map: error: {exc}", file=sys.stderr)
        return 2
    code = 0
    for path in args.files:
        try:
            bodies = list(_bodies(path))
        except OSError as exc:
            print(f"tally collector map: cannot read {path}: {exc.strerror}", file=sys.stderr)
            code = 1
            continue
        for where, body in bodies:
            if isinstance(body, str | bytes | dict):
                outcome = map_notification(body, cloud=cloud)
            else:
                outcome = map_notification(json.dumps(body), cloud=cloud)
            if isinstance(outcome, Mapped):
                print(json.dumps(outcome.event, sort_keys=True))
            elif isinstance(outcome, Skipped):
                print(
                    f"{where}: skipped event_type={outcome.event_type} reason={outcome.reason}",
                    file=sys.stderr,
                )
            else:
                print(f"{where}: unparseable reason={outcome.reason} {outcome.detail}", file=sys.stderr)
    return code


@asynccontextmanager
async def open_sink(settings: Settings) -> AsyncIterator[EventSink]:
    """The HTTP sink when TALLY_OSC_REPORTING_URL is set, else this process's ingest over the store."""
    if settings.osc_reporting_url:
        token = settings.osc_token.get_secret_value() if settings.osc_token else None
        sink = HttpSink(settings.osc_reporting_url, token, insecure=settings.osc_reporting_insecure)
        try:
            yield sink
        finally:
            await sink.aclose()
        return
    from tally.ingest import IngestPipeline
    from tally.store import open_store

    async with open_store(settings.store_url) as store:
        if settings.reporting_migrate_on_start:
            await store.migrate_up()
        yield IngestSink(IngestPipeline(store, require_size_schema=settings.ingest_require_size_schema))


async def run_collector_command(args: argparse.Namespace) -> int:
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"tally collector: error: {exc}", file=sys.stderr)
        return 2
    setup_logging(settings.log_level, settings.log_format)
    try:
        if args.dump:
            config = amqp_config(settings)
            if config is None:
                raise CollectorError("--dump needs TALLY_OSC_AMQP_URL")
            return await run_dump(config, lambda line: print(line, flush=True), count=args.count)
        async with open_sink(settings) as sink:
            collector = Collector(settings, sink=sink)
            async with anyio.create_task_group() as tg:
                await tg.start(collector.serve)
                app = create_health_app(collector, metrics_enabled=settings.metrics_enabled)
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
