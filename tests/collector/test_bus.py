"""The in-process bus feeds the same decode, map and outbox path; ``drain()`` is the lockstep handshake."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from collector_support import MemorySink, fixtures
from prometheus_client import REGISTRY

from tally.collector import Collector, CollectorError, InProcessBus
from tally.config import Settings
from tally.daemon import standalone_app
from tally.http import Readiness

pytestmark = pytest.mark.anyio


def _settings(tmp_path: Path, **over: object) -> Settings:
    values: dict[str, object] = {
        "state_dir": tmp_path,
        "osc_amqp_url": None,
        "osc_cloud": "os-dev",
        "osc_flush_interval_s": 3600,
    }
    values.update(over)
    return Settings(**values)  # type: ignore[arg-type]


async def test_the_22_types_through_the_bus_and_drain(tmp_path: Path) -> None:
    bus, sink = InProcessBus(), MemorySink()
    cases = fixtures()
    async with anyio.create_task_group() as tg:
        collector: Collector = await tg.start(Collector(_settings(tmp_path), sink=sink, bus=bus).serve)
        for case in cases:
            n = case["notification"]
            await bus.publish(n["exchange"], n["routing_key"], n["body"])
        with anyio.fail_after(10):
            await bus.drain()
        stats = collector.statistics()
        assert (stats.taken, stats.acked, stats.in_hand, stats.outbox_depth) == (len(cases), len(cases), 0, 0)
        tg.cancel_scope.cancel()
    expected = {c["expected"]["event_id"]: c["expected"] for c in cases if "skipped" not in c["expected"]}
    assert {e["event_id"]: e for e in sink.events.values()} == expected
    assert bus.acked == bus.published == len(cases)


async def test_health_turns_unhealthy_while_rows_wait_and_recovers(tmp_path: Path) -> None:
    bus, sink = InProcessBus(), MemorySink()
    sink.fail_next = 10**9
    settings = _settings(tmp_path, osc_unhealthy_threshold_s=1, osc_flush_interval_s=0.1)
    case = fixtures()[0]["notification"]
    async with anyio.create_task_group() as tg:
        collector: Collector = await tg.start(Collector(settings, sink=sink, bus=bus).serve)
        client = standalone_app(collector, Readiness()).test_client()
        await bus.publish(case["exchange"], case["routing_key"], json.dumps(case["body"]))
        await bus.wait_consumed()
        assert (await client.get("/healthz")).status_code == 200
        await anyio.sleep(1.3)
        response = await client.get("/healthz")
        assert response.status_code == 503
        body = await response.get_json()
        assert body["status"] == "unhealthy" and body["outbox_depth"] == 1
        sink.fail_next = 0
        with anyio.fail_after(10):
            await bus.drain()
        assert (await client.get("/healthz")).status_code == 200
        metrics = await (await client.get("/metrics")).get_data(as_text=True)
        assert "tally_collector_received_total" in metrics
        tg.cancel_scope.cancel()


async def test_counts_by_type_and_reason(tmp_path: Path) -> None:
    bus, sink = InProcessBus(), MemorySink()

    def value(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    before = (
        value("tally_collector_received_total", event_type="volume.delete.end"),
        value(
            "tally_collector_skipped_total", event_type="other", reason="unmapped"
        ),  # not in the mapping table
        value("tally_collector_unparseable_total", reason="json"),
    )
    inner = {
        "message_id": "x",
        "timestamp": "2026-03-01 10:00:00",
        "payload": {"volume_id": "v", "tenant_id": "t"},
    }
    async with anyio.create_task_group() as tg:
        await tg.start(Collector(_settings(tmp_path), sink=sink, bus=bus).serve)
        await bus.publish("openstack", "notifications.info", dict(inner, event_type="volume.delete.end"))
        await bus.publish(
            "neutron", "notifications.info", dict(inner, message_id="y", event_type="port.create.end")
        )
        await bus.publish("neutron", "notifications.info", b"{not json")
        with anyio.fail_after(10):
            await bus.drain()
        tg.cancel_scope.cancel()
    after = (
        value("tally_collector_received_total", event_type="volume.delete.end"),
        value("tally_collector_skipped_total", event_type="other", reason="unmapped"),
        value("tally_collector_unparseable_total", reason="json"),
    )
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 1, 1]
    assert [k[0] for k in sink.events] == ["x"]


async def test_a_collector_needs_a_source(tmp_path: Path) -> None:
    with pytest.raises(CollectorError, match="TALLY_OSC_AMQP_URL"):
        Collector(_settings(tmp_path), sink=MemorySink())
