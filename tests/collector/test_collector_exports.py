"""The public surfaces of tally.collector and tally.outbox: a change here must be deliberate."""

from __future__ import annotations

import tally.collector
import tally.outbox


def test_collector_surface() -> None:
    assert sorted(tally.collector.__all__) == sorted(
        [
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
    )
    for name in tally.collector.__all__:
        assert getattr(tally.collector, name) is not None


def test_outbox_surface() -> None:
    assert sorted(tally.outbox.__all__) == sorted(
        [
            "DeadLetterRow",
            "EventSink",
            "HttpSink",
            "IngestSink",
            "Outbox",
            "OutboxWriteError",
            "Sender",
            "SinkConfigError",
            "WARNINGS_SUPPRESSED",
            "open_outbox",
        ]
    )
