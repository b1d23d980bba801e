"""``tally collector definitions``: the collector's exchanges, queue and bindings as RabbitMQ definitions,
for the broker to load at boot (the document is the collector's ``broker_definitions``; why it is needed:
docs/collector.md, "Broker restarts")."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tally.collector import CollectorError, amqp_config, broker_definitions
from tally.config import ConfigError, load_settings


def register(sub: Any) -> None:
    """Add ``definitions`` to ``tally collector``'s subparsers."""
    parser = sub.add_parser(
        "definitions",
        help="print the collector's exchanges, queue and bindings as RabbitMQ definitions",
        description=(
            "For the broker to load at boot (definitions.local.path), so a restart with non-durable "
            "exchanges keeps the collector's bindings. From the TALLY_OSC_* settings."
        ),
    )
    parser.add_argument("--out", type=Path, default=None, help="write to FILE instead of standard output")
    parser.set_defaults(handler=definitions_command)


def definitions_command(args: argparse.Namespace) -> int:
    try:
        config = amqp_config(load_settings())
        if config is None:
            raise ConfigError("TALLY_OSC_AMQP_URL is not set: the definitions are for its vhost")
        text = json.dumps(broker_definitions(config, config.address().vhost), indent=2) + "\n"
    except (ConfigError, CollectorError) as exc:
        print(f"tally collector definitions: error: {exc}", file=sys.stderr)
        return 2
    if args.out is None:
        sys.stdout.write(text)
        return 0
    try:
        args.out.write_text(text)
    except OSError as exc:
        print(f"tally collector definitions: cannot write {args.out}: {exc.strerror}", file=sys.stderr)
        return 1
    return 0
