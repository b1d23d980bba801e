"""The public surfaces of tally.collector and tally.outbox: a change here must be deliberate."""

from __future__ import annotations

import tally.collector
import tally.outbox


def test_collector_surface() -> None:
    assert sorted(tally.collector.__all__) == sorted(
        [
            "MAX_BODY_BYTES",
            "MAX_EVENT_BYTES",
            "RULES",
            "AmqpConfig",
            "AmqpSource",
            "Collector",
            "CollectorError",
            "CollectorStatistics",
            "Decoded",
            "DecodeOutcome",
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
    )
    for name in tally.collector.__all__:
        assert getattr(tally.collector, name) is not None


def test_outbox_surface() -> None:
    assert sorted(tally.outbox.__all__) == sorted(
        [
            "DeadLetterRow",
            "DeliveryResult",
            "DeliveryStatus",
            "EventSink",
            "HttpSink",
            "IngestSink",
            "Outbox",
            "OutboxRow",
            "OutboxStatistics",
            "OutboxWriteError",
            "Refusal",
            "Sender",
            "SenderStatistics",
            "SinkConfigError",
            "open_outbox",
        ]
    )
