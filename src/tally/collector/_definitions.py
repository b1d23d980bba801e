"""``tally collector definitions``: the collector's exchanges, queue and bindings as RabbitMQ definitions.

With OpenStack's non-durable exchanges a broker restart deletes the collector's bindings, and a
service that reconnects before the collector publishes into an exchange with no binding of ours
(docs/collector.md, "Broker restarts"). RabbitMQ imports definitions at boot, before it opens its
listeners: with this file loaded (``definitions.local.path``, merged into a definitions file the
deployment already has, which holds its users), every exchange and binding is back before any
service can publish, and nothing published after a restart is routed nowhere. The exchanges keep
the durability the services declare them with, so the services' own declarations still match.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tally.config import ConfigError, load_settings

from ._amqp import AmqpConfig
from ._errors import CollectorError
from ._service import amqp_config


def broker_definitions(config: AmqpConfig, vhost: str) -> dict[str, Any]:
    """The definitions document for ``config`` on ``vhost`` (RabbitMQ's import format)."""
    return {
        "vhosts": [{"name": vhost}],
        "exchanges": [
            {
                "name": exchange,
                "vhost": vhost,
                "type": "topic",
                "durable": config.durable_exchanges,
                "auto_delete": False,
                "internal": False,
                "arguments": {},
            }
            for exchange in config.exchanges
        ],
        "queues": [
            {
                "name": config.queue_name,
                "vhost": vhost,
                "durable": True,
                "auto_delete": False,
                "arguments": config.queue_arguments() or {},
            }
        ],
        "bindings": [
            {
                "source": exchange,
                "vhost": vhost,
                "destination": config.queue_name,
                "destination_type": "queue",
                "routing_key": topic,
                "arguments": {},
            }
            for exchange in config.exchanges
            for topic in config.topics
        ],
    }


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
