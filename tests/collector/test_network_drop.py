"""A network drop between the collector and the broker is not a broker restart.

The collector reaches the machine's RabbitMQ (the run's vhost) through a link of the test's own
(``LossyLink``) that drops every packet for a while: the connection dies on missing heartbeats and
every connection attempt times out, as a lost SYN does. The broker never restarted, so its
non-durable exchanges are all still there when the link is back: the collector finds its canary
exchange, counts no rebind race, and consumes what was published meanwhile (0 lost).
"""

from __future__ import annotations

import time
from pathlib import Path
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


def _metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels or None) or 0.0


async def test_dropped_packets_cost_a_reconnect_and_count_no_rebind_race(
    amqp_url: str, tmp_path: Path
) -> None:
    parts = urlsplit(amqp_url)
    link = LossyLink(parts.port or 5672)
    through = parts._replace(netloc=f"{parts.username}:{parts.password}@127.0.0.1:{link.port}").geturl()
    races_before = _metric("tally_collector_rebind_races_total", exchange="nova")
    lost_before = _metric("tally_collector_connections_lost_total")
    try:
        async with (
            service_exchanges(amqp_url, ["nova"]) as channel,
            collecting(tmp_path, through + "?heartbeat=1&connect_timeout=1", "nova") as (sink, collector),
        ):
            await wait_for(lambda: collector.broker_problem() is None, within=10)
            for n in range(10):
                await publish(
                    channel,
                    "nova",
                    v2_body(oslo_inner("compute.instance.create.end", instance_payload(f"before-{n}"))),
                )
            await wait_for(lambda: len(sink.events) >= 10, within=10)

            link.drop()
            began = time.monotonic()
            # Published to the broker directly: they wait in the collector's queue.
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

            await wait_for(lambda: collector.broker_problem() is None, within=15)
            await wait_for(lambda: len(sink.events) >= 20, within=15)
            print(f"the drop was noticed after {noticed:.1f} s (heartbeat 1 s)")
        resources = {event["resource_id"] for event in sink.events.values()}
        assert resources == {f"{when}-{n}" for when in ("before", "during") for n in range(10)}
        assert _metric("tally_collector_connections_lost_total") > lost_before
        assert _metric("tally_collector_rebind_races_total", exchange="nova") == races_before
    finally:
        link.close()
