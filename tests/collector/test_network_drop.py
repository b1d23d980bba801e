"""A network drop between the collector and the broker is not a broker restart.

Under load: notifications flow at a steady rate all along. The collector reaches the machine's
RabbitMQ (the run's vhost) through a link of the test's own (``LossyLink``) that drops every packet
for a while: the connection dies on missing heartbeats and every connection attempt times out, as a
lost SYN does. The broker never restarted, so its non-durable exchanges are all still there when the
link is back: the collector finds its canary exchange, counts no rebind race, and consumes what was
published meanwhile (0 lost, 0 doubled).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from collector_support import (
    collecting,
    instance_payload,
    oslo_inner,
    publish,
    service_exchanges,
    v2_body,
    wait_for,
)
from lossy_link import LossyLink
from prometheus_client import REGISTRY

pytestmark = [pytest.mark.anyio, pytest.mark.rabbitmq]

DROP_S = 8.0
RATE = 50  # steady notifications a second
# From the link's return to every notification published until then delivered.
RECOVERY_S = 20.0


def _metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels or None) or 0.0


async def test_dropped_packets_cost_a_reconnect_and_count_no_rebind_race(
    amqp_url: str, tmp_path: Path
) -> None:
    """Under load: notifications flow at a steady RATE a second from before the drop until after the
    link is back; every one arrives once, within RECOVERY_S of the link's return."""
    parts = urlsplit(amqp_url)
    link = LossyLink(parts.port or 5672)
    through = parts._replace(netloc=f"{parts.username}:{parts.password}@127.0.0.1:{link.port}").geturl()
    races_before = _metric("tally_collector_rebind_races_total", exchange="nova")
    lost_before = _metric("tally_collector_connections_lost_total")
    steady: list[str] = []
    stop = anyio.Event()
    try:
        async with (
            service_exchanges(amqp_url, ["nova"]) as channel,
            collecting(tmp_path, through + "?heartbeat=1&connect_timeout=1", "nova") as (sink, collector),
            anyio.create_task_group() as load,
        ):
            await wait_for(lambda: collector.broker_problem() is None, within=10)
            # Published to the broker directly, all along: during the drop they wait in the queue.
            load.start_soon(_publish_steadily, channel, steady, stop)
            for n in range(10):
                await publish(
                    channel,
                    "nova",
                    v2_body(oslo_inner("compute.instance.create.end", instance_payload(f"before-{n}"))),
                )
            await wait_for(lambda: len(sink.events) >= 10 + RATE, within=10)

            link.drop()
            began = time.monotonic()
            for n in range(10):
                await publish(
                    channel,
                    "nova",
                    v2_body(oslo_inner("compute.instance.create.end", instance_payload(f"during-{n}"))),
                )
            await wait_for(lambda: collector.broker_problem() is not None, within=DROP_S)
            noticed = time.monotonic() - began
            await anyio.sleep(max(0.0, DROP_S - (time.monotonic() - began)))
            assert collector.broker_problem() is not None
            link.restore()
            restored = time.monotonic()
            sent_by_then = 20 + len(steady)

            await wait_for(lambda: collector.broker_problem() is None, within=15)
            await wait_for(lambda: len(sink.events) >= sent_by_then, within=RECOVERY_S)
            caught_up = time.monotonic() - restored
            await anyio.sleep(1)  # the load goes on a while after the recovery
            stop.set()
            await wait_for(lambda: len(sink.events) >= 20 + len(steady), within=15)
            print(f"the drop was noticed after {noticed:.1f} s (heartbeat 1 s)")
            print(f"{len(steady)} steady notifications at {RATE}/s")
            print(f"all published until then delivered {caught_up:.1f} s after the link was back")
        resources = sorted(event["resource_id"] for event in sink.events.values())
        expected = [f"{when}-{n}" for when in ("before", "during") for n in range(10)] + steady
        assert resources == sorted(expected)  # each once: 0 lost, 0 doubled
        assert _metric("tally_collector_connections_lost_total") > lost_before
        assert _metric("tally_collector_rebind_races_total", exchange="nova") == races_before
    finally:
        link.close()


async def _publish_steadily(channel: Any, into: list[str], stop: anyio.Event) -> None:
    """``steady-N`` at RATE a second until ``stop`` is set; each name noted once its publish returned."""
    began = time.monotonic()
    while not stop.is_set():
        name = f"steady-{len(into)}"
        body = v2_body(oslo_inner("compute.instance.create.end", instance_payload(name)))
        await publish(channel, "nova", body)
        into.append(name)
        await anyio.sleep(max(0.0, began + len(into) / RATE - time.monotonic()))
