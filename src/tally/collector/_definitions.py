"""The collector's exchanges, queue and bindings as RabbitMQ definitions (``tally collector definitions``).

With OpenStack's non-durable exchanges a broker restart deletes the collector's bindings, and a
service that reconnects before the collector publishes into an exchange with no binding of ours
(docs/collector.md, "Broker restarts"). RabbitMQ imports definitions at boot, before it opens its
listeners: with this file loaded (``definitions.local.path``, merged into a definitions file the
deployment already has, which holds its users), every exchange and binding is back before any
service can publish, and nothing published after a restart is routed nowhere. The exchanges keep
the durability the services declare them with, so the services' own declarations still match.
"""

from __future__ import annotations

from typing import Any

from ._amqp import AmqpConfig


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
