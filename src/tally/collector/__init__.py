"""The collector: oslo notifications from RabbitMQ (or the in-process bus) into the outbox.

``map_notification`` is the pure mapping the simulator shares to write its
expected events; ``Collector`` is what the composition root (``tally.app``) builds for the daemon,
``tally collector`` and the simulator.
"""

from ._amqp import AmqpSource as AmqpSource
from ._amqp import queue_statistics as queue_statistics
from ._bus import InProcessBus as InProcessBus
from ._decode import parse_oslo_timestamp as parse_oslo_timestamp
from ._definitions import broker_definitions as broker_definitions
from ._delivery import Delivery as Delivery
from ._dump import run_dump as run_dump
from ._errors import CollectorError as CollectorError
from ._mapping import map_notification as map_notification
from ._outcome import Mapped as Mapped
from ._outcome import Skipped as Skipped
from ._service import Collector as Collector
from ._service import amqp_config as amqp_config
from ._url import redact_url as redact_url

__all__ = [
    "AmqpSource",
    "Collector",
    "CollectorError",
    "Delivery",
    "InProcessBus",
    "Mapped",
    "Skipped",
    "amqp_config",
    "broker_definitions",
    "map_notification",
    "parse_oslo_timestamp",
    "queue_statistics",
    "redact_url",
    "run_dump",
]
