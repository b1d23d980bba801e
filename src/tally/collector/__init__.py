"""The collector: oslo notifications from RabbitMQ (or the in-process bus) into the outbox.

``map_notification`` is the pure mapping the simulator shares to write its
expected events; ``serve_collector`` is the actor the daemon runs.
"""

from ._amqp import AmqpConfig as AmqpConfig
from ._amqp import AmqpSource as AmqpSource
from ._amqp import queue_statistics as queue_statistics
from ._bus import InProcessBus as InProcessBus
from ._decode import MAX_BODY_BYTES as MAX_BODY_BYTES
from ._decode import decode_body as decode_body
from ._decode import parse_oslo_timestamp as parse_oslo_timestamp
from ._delivery import Delivery as Delivery
from ._errors import CollectorError as CollectorError
from ._mapping import MAX_EVENT_BYTES as MAX_EVENT_BYTES
from ._mapping import RULES as RULES
from ._mapping import map_decoded as map_decoded
from ._mapping import map_notification as map_notification
from ._outcome import Decoded as Decoded
from ._outcome import DecodeOutcome as DecodeOutcome
from ._outcome import MapOutcome as MapOutcome
from ._outcome import Mapped as Mapped
from ._outcome import Notification as Notification
from ._outcome import Skipped as Skipped
from ._outcome import Unparseable as Unparseable
from ._service import Collector as Collector
from ._service import CollectorStatistics as CollectorStatistics
from ._service import Health as Health
from ._service import amqp_config as amqp_config
from ._service import serve_collector as serve_collector

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_EVENT_BYTES",
    "RULES",
    "AmqpConfig",
    "AmqpSource",
    "Collector",
    "CollectorError",
    "CollectorStatistics",
    "DecodeOutcome",
    "Decoded",
    "Delivery",
    "Health",
    "InProcessBus",
    "MapOutcome",
    "Mapped",
    "Notification",
    "Skipped",
    "Unparseable",
    "amqp_config",
    "decode_body",
    "map_decoded",
    "map_notification",
    "parse_oslo_timestamp",
    "queue_statistics",
    "serve_collector",
]
