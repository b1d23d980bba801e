"""D4 on the collector: oslo event types are label values only when the mapping table names them."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from collector_support import MemorySink
from prometheus_client import REGISTRY, generate_latest

from tally.collector import Collector, InProcessBus
from tally.collector._mapping import RULES
from tally.config import Settings
from tally.core.internals import MAPPED_EVENT_TYPES

pytestmark = pytest.mark.anyio


def _series() -> int:
    text = generate_latest(REGISTRY).decode()
    return sum(1 for line in text.splitlines() if line and not line.startswith("#"))


async def test_2000_novel_oslo_types_add_no_series(tmp_path: Path) -> None:
    bus, sink = InProcessBus(), MemorySink()
    settings = Settings(state_dir=tmp_path, osc_amqp_url=None, osc_cloud="os-dev", osc_flush_interval_s=3600)

    async def publish(start: int, count: int) -> None:
        for n in range(start, start + count):
            inner = {"message_id": f"m-{n}", "timestamp": "2026-03-01 10:00:00", "payload": {}}
            await bus.publish("nova", "notifications.info", dict(inner, event_type=f"novel{n}.thing.end"))
        with anyio.fail_after(30):
            await bus.drain()

    async with anyio.create_task_group() as tg:
        await tg.start(Collector(settings, sink=sink, bus=bus).serve)
        await publish(0, 10)
        base = _series()
        await publish(10, 2000)
        assert _series() == base
        tg.cancel_scope.cancel()
    other = REGISTRY.get_sample_value(
        "tally_collector_skipped_total", {"event_type": "other", "reason": "unmapped"}
    )
    assert other is not None and other >= 2010
    assert "novel" not in generate_latest(REGISTRY).decode()


def test_the_known_event_types_are_the_mapping_tables() -> None:
    assert {rule.event_type for rule in RULES.values()} == MAPPED_EVENT_TYPES
