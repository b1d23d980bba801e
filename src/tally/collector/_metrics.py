"""The collector's metrics, defined once on the default registry.

The bus carries whatever oslo event types the cloud's services emit, so
``RECEIVED`` and ``SKIPPED`` label an oslo event type only when the mapping table
names it (mapped or skipped on purpose); every other type is ``other``. The
reasons are the collector's own, a fixed set.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from tally.core import bounded

from ._mapping import RULES, SKIP_REASONS

KNOWN_OSLO_TYPES = frozenset(RULES) | frozenset(SKIP_REASONS)


class _ByOsloType:
    """A counter whose first label is an oslo event type, bounded to ``KNOWN_OSLO_TYPES``."""

    def __init__(self, counter: Counter) -> None:
        self._counter = counter

    def labels(self, event_type: str, *rest: str) -> Counter:
        return self._counter.labels(bounded(event_type, KNOWN_OSLO_TYPES), *rest)


RECEIVED = _ByOsloType(
    Counter(
        "tally_collector_received_total",
        "Readable notifications taken from the bus, by oslo event type (other: not in the mapping table).",
        ["event_type"],
    )
)
SKIPPED = _ByOsloType(
    Counter(
        "tally_collector_skipped_total",
        "Notifications acked without booking anything, by oslo event type (other: not in the mapping "
        "table) and reason.",
        ["event_type", "reason"],
    )
)
UNPARSEABLE = Counter(
    "tally_collector_unparseable_total", "Bodies acked that could not be read, by reason.", ["reason"]
)
for _reason in ("oversized", "encoding", "json", "envelope", "event_type", "timestamp"):
    UNPARSEABLE.labels(_reason)
ACKED = Counter("tally_collector_acked_total", "Deliveries acknowledged after their group committed.")
COMMITTED = Counter("tally_collector_events_committed_total", "Mapped events newly committed to the outbox.")
ACK_FAILURES = Counter(
    "tally_collector_ack_failures_total",
    "Deliveries whose ack could not be sent (channel gone); the broker redelivers them.",
)
CONNECTIONS_LOST = Counter(
    "tally_collector_connections_lost_total",
    "Consuming connections to the broker that ended while running (each is opened again, with backoff).",
)
PAUSED = Gauge("tally_collector_paused", "1 while consuming is paused because the outbox is full.")
QUEUE_MESSAGES = Gauge(
    "tally_collector_queue_messages",
    "Messages ready in the collector's queue, as the passive declare reports.",
)
QUEUE_CONSUMERS = Gauge(
    "tally_collector_queue_consumers", "Consumers of the collector's queue, as the passive declare reports."
)
OWNER_MISSING = Counter(
    "tally_collector_owner_missing_total",
    "Events sent without a project (none in the payload or the request context): the Reporting API "
    "refuses them into its dead letters. By oslo event type.",
    ["event_type"],
)
CONNECTED = Gauge(
    "tally_collector_connected",
    "1 while the collector consumes from the broker, 0 while it connects again (the log says why).",
)
REBIND_RACES = Counter(
    "tally_collector_rebind_races_total",
    "Broker restarts after which a service had declared a non-durable exchange again before the "
    "collector bound its queue on it: notifications published in between may have reached no queue "
    "of Tally's (the next sync books what they missed). By exchange (the configured ones).",
    ["exchange"],
)
