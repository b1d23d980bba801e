"""Helpers of the collector tests: publishing exactly as oslo.messaging does, and a sink that records.

oslo.messaging's rabbit driver (kombu) publishes a notification on the
service's topic exchange with routing key ``<topic>.<priority>``, the JSON
body (``content_type`` application/json, ``content_encoding`` utf-8) and, with
the default ``amqp_durable_queues = false``, a transient delivery mode.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aio_pika
import anyio

from tally.collector import Collector
from tally.config import Settings
from tally.outbox.internals import DeliveryResult, DeliveryStatus

FIXTURES = Path(__file__).parent / "fixtures"


def fixtures() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) | {"name": p.stem} for p in sorted(FIXTURES.glob("*.json"))]


def oslo_inner(
    event_type: str, payload: Any, *, message_id: str | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "message_id": message_id or str(uuid.uuid4()),
        "publisher_id": "compute.cmp-01",
        "event_type": event_type,
        "priority": "INFO",
        "payload": payload,
        "timestamp": "2026-03-01 10:00:00.000001",
        "_context_project_id": "ctxproj",
        "_context_auth_token": None,
        "_unique_id": uuid.uuid4().hex,
    } | extra


def instance_payload(resource_id: str, tenant: str = "t1") -> dict[str, Any]:
    """A legacy ``compute.instance.create.end`` payload of an m1.small, as nova sends it."""
    return {
        "instance_id": resource_id,
        "tenant_id": tenant,
        "instance_type": "m1.small",
        "memory_mb": 2048,
        "vcpus": 1,
        "root_gb": 20,
        "ephemeral_gb": 0,
        "state": "active",
    }


async def wait_for(predicate: Callable[[], bool], within: float) -> None:
    """Poll state that lives outside the calling task (a sink, a metric, another process)."""
    with anyio.fail_after(within):
        while not predicate():  # noqa: ASYNC110
            await anyio.sleep(0.05)


@asynccontextmanager
async def collecting(
    tmp_path: Path, url: str, exchange: str, **over: Any
) -> AsyncIterator[tuple[MemorySink, Collector]]:
    """The collector in this process on ``exchange``, delivering to a ``MemorySink``; whatever it
    raises fails the caller (a broker fault must never end it). ``over`` overrides settings."""
    sink = MemorySink()
    conf = settings(tmp_path, url, f"t-{uuid.uuid4().hex[:8]}", [exchange], **over)
    async with anyio.create_task_group() as tg:
        collector: Collector = await tg.start(Collector(conf, sink=sink).serve)
        yield sink, collector
        assert collector.statistics().taken >= len(sink.events)
        tg.cancel_scope.cancel()


def v2_body(inner: dict[str, Any]) -> bytes:
    return json.dumps({"oslo.version": "2.0", "oslo.message": json.dumps(inner)}).encode()


def oslo_message(body: bytes) -> aio_pika.Message:
    return aio_pika.Message(
        body,
        content_type="application/json",
        content_encoding="utf-8",
        delivery_mode=aio_pika.DeliveryMode.NOT_PERSISTENT,
        priority=0,
    )


@asynccontextmanager
async def service_exchanges(url: str, names: Sequence[str]) -> AsyncIterator[aio_pika.abc.AbstractChannel]:
    """Declare topic exchanges as the OpenStack services do (not durable); delete them after."""
    connection = await aio_pika.connect(url)
    try:
        channel = await connection.channel()
        for name in names:
            await channel.declare_exchange(name, aio_pika.ExchangeType.TOPIC, durable=False)
        yield channel
    finally:
        with anyio.CancelScope(shield=True):
            cleanup = await connection.channel()
            for name in names:
                await cleanup.exchange_delete(name)
            await connection.close()


async def publish(
    channel: aio_pika.abc.AbstractChannel, exchange: str, body: bytes, key: str = "notifications.info"
) -> None:
    target = await channel.get_exchange(exchange, ensure=False)
    await target.publish(oslo_message(body), routing_key=key)


async def delete_queue(url: str, name: str) -> None:
    connection = await aio_pika.connect(url)
    try:
        channel = await connection.channel()
        await channel.queue_delete(name)
    finally:
        await connection.close()


class MemorySink:
    """An EventSink of the same shape as the real ones, keeping events by (event_id, timestamp)."""

    def __init__(self) -> None:
        self.events: dict[tuple[str, str], dict[str, Any]] = {}
        self.deliveries = 0
        self.fail_next = 0

    async def deliver(self, items: list[dict[str, Any]]) -> DeliveryResult:
        self.deliveries += 1
        if self.fail_next:
            self.fail_next -= 1
            return DeliveryResult(DeliveryStatus.RETRY, reason="sink_error", detail="failing on purpose")
        accepted = duplicates = 0
        for item in items:
            key = (item["event_id"], item["timestamp"])
            if key in self.events:
                duplicates += 1
            else:
                self.events[key] = item
                accepted += 1
        return DeliveryResult(DeliveryStatus.ACCEPTED, accepted=accepted, duplicates=duplicates)


def settings(tmp_path: Path, url: str, unique: str, exchanges: Sequence[str], **over: Any) -> Settings:
    values: dict[str, Any] = {
        "state_dir": tmp_path,
        "osc_amqp_url": url,
        "osc_exchanges": ",".join(exchanges),
        "osc_topics": "notifications.info,notifications.error",
        "osc_queue_name": f"{unique}-q",
        "osc_cloud": "os-dev",
        "osc_flush_interval_s": 0.05,
        "osc_buffer_path": tmp_path / "outbox.sqlite3",
    }
    values.update(over)
    return Settings(**values)
