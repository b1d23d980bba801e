"""What a production broker does to the collector, on a RabbitMQ node this module starts for itself.

A service publishes through oslo.messaging's own Notifier, with OpenStack's defaults (non-durable
exchanges, ``retry=-1``), in a process of its own; the collector runs here. The broker is then
restarted (which deletes non-durable exchanges and their bindings), frozen (SIGSTOP), put under a
memory alarm, and has the collector's queue deleted under it (``basic.cancel``). Each time: every
notification published arrives, and the collector is still running. What the Notifier itself gave up
on (it logs "Could not send notification" and drops it: seen once in 9,000 across three restarts) was
never published; the publisher names those, and more than 1% of them fails the test.

With non-durable exchanges a service whose retry lands between the node opening its port and the
collector's binding publishes into nothing: that loss is physical, so the restart test holds the
collector to never losing a notification without counting the race
(``tally_collector_rebind_races_total``), a second test makes the race happen and sees it counted,
and a node that loads ``tally collector definitions`` at boot loses nothing at all.

``TALLY_TEST_BROKER_RESTARTS`` sets the number of restarts (CI: 3; the figures in docs/collector.md
are from 10).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from broker_nodes import start_nodes
from collector_support import (
    MemorySink,
    collecting,
    instance_payload,
    oslo_inner,
    oslo_message,
    service_exchanges,
    v2_body,
    wait_for,
)
from prometheus_client import REGISTRY

from tally.collector import _amqp, broker_definitions
from tally.collector._amqp import AmqpConfig
from tally.testing.rabbit_node import BrokerNode

pytestmark = [pytest.mark.anyio, pytest.mark.rabbitmq]

PUBLISHER = Path(__file__).with_name("oslo_publisher.py")
RESTARTS = int(os.environ.get("TALLY_TEST_BROKER_RESTARTS", "3"))
PUBLISHER_LOG = Path(os.environ.get("TMPDIR", "/tmp")) / f"tally-oslo-publisher-{os.getpid()}.log"


def _metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels or None) or 0.0


DEFINED_VHOST = "openstack"
DEFINED_QUEUE = "tally-defined-q"
TOPICS = "notifications.info,notifications.error"


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerNode]:
    pytest.importorskip("oslo_messaging")
    broker = BrokerNode(tmp_path_factory.mktemp("rabbit-node"))
    start_nodes(broker)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def defined_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerNode]:
    """A node that loads the collector's definitions at boot (with the users a deployment's own
    definitions file holds)."""
    pytest.importorskip("oslo_messaging")
    base = tmp_path_factory.mktemp("rabbit-defined")
    topics = tuple(TOPICS.split(","))
    config = AmqpConfig(url="", exchanges=("nova",), topics=topics, queue_name=DEFINED_QUEUE)
    definitions = broker_definitions(config, DEFINED_VHOST)
    definitions["users"] = [{"name": "guest", "password": "guest", "tags": "administrator"}]
    definitions["vhosts"].append({"name": "/"})
    definitions["permissions"] = [
        {"user": "guest", "vhost": DEFINED_VHOST, "configure": ".*", "write": ".*", "read": ".*"}
    ]
    path = base / "definitions.json"
    path.write_text(json.dumps(definitions))
    boot = f"definitions.import_backend = local_filesystem\ndefinitions.local.path = {path}\n"
    broker = BrokerNode(base / "node", config=boot)
    start_nodes(broker)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def vhost(node: BrokerNode) -> Iterator[str]:
    name = f"v-{uuid.uuid4().hex[:8]}"
    node.add_vhost(name)
    try:
        yield name
    finally:
        node.ctl("delete_vhost", name)


def _resources(sink: MemorySink) -> set[str]:
    return {event["resource_id"] for event in sink.events.values()}


async def _settled(sink: MemorySink, count: int) -> None:
    """Until ``count`` resources arrived, or a minute passed: the caller's assertion counts the loss."""
    with contextlib.suppress(TimeoutError):
        await wait_for(lambda: len(_resources(sink)) >= count, within=60)


@asynccontextmanager
async def _publishing(
    url: str, exchange: str, count: int, rate: float, dropped: set[str]
) -> AsyncIterator[Any]:
    """The oslo publisher as a process; waits for it to have published everything on exit, and adds
    to ``dropped`` the resources whose notification its Notifier gave up on (never published). Its
    log goes to ``PUBLISHER_LOG``."""
    command = [sys.executable, str(PUBLISHER), url.replace("amqp://", "rabbit://", 1), exchange]
    with PUBLISHER_LOG.open("ab") as log:
        process = await anyio.open_process([*command, str(count), str(rate)], stderr=log)
    try:
        yield process
        with anyio.fail_after(180):
            said = b"".join([chunk async for chunk in process.stdout]).decode()
            await process.wait()
        assert process.returncode == 0
        dropped.update(line.split()[1] for line in said.splitlines() if line.startswith("dropped "))
    finally:
        if process.returncode is None:
            process.kill()
            with anyio.CancelScope(shield=True):
                await process.wait()


def _published(count: int, dropped: set[str]) -> set[str]:
    """The resources published: all but those the Notifier gave up on, which the service never sent
    (oslo_publisher.py). More than 1% of them is the publisher broken, not a restart's race."""
    print(f"the Notifier gave up on {len(dropped)} of {count}: {sorted(dropped)[:5]}")
    assert len(dropped) <= count // 100, f"the Notifier gave up on {len(dropped)} of {count}"
    return {f"vm-{n}" for n in range(count)} - dropped


async def _restarting(node: BrokerNode, sink: MemorySink, publisher: Any) -> int:
    """Restart the node ``RESTARTS`` times while the publisher runs; how many restarts were done."""
    restarted = 0
    # oslo drops what it publishes before its first connection ever opened: restart only once the
    # service is connected, as a service in production is.
    await wait_for(lambda: len(sink.events) > 0, within=60)
    while restarted < RESTARTS and publisher.returncode is None:
        began, before = time.monotonic(), len(sink.events)
        await anyio.to_thread.run_sync(node.restart)
        restarted += 1
        print(f"restart {restarted} took {time.monotonic() - began:.1f} s at {before} collected")
        await wait_for(lambda before=before: len(sink.events) > before, within=30)
    return restarted


async def test_broker_restarts_with_non_durable_exchanges_lose_nothing_the_collector_does_not_count(
    node: BrokerNode, vhost: str, tmp_path: Path
) -> None:
    """OpenStack's defaults: whatever is lost was published in a race the collector counted."""
    url = node.vhost_url(vhost)
    # Enough to publish through every restart (each takes 6-20 s on a loaded machine).
    count = 3000 * RESTARTS
    lost_before = _metric("tally_collector_connections_lost_total")
    races_before = _metric("tally_collector_rebind_races_total", exchange="nova")
    dropped: set[str] = set()
    async with collecting(tmp_path, url, "nova") as (sink, _):
        async with _publishing(url, "nova", count, 150, dropped) as publisher:
            restarted = await _restarting(node, sink, publisher)
        await _settled(sink, count)
    assert restarted == RESTARTS, "the publisher finished before every restart was done"
    missing = _published(count, dropped) - _resources(sink)
    races = _metric("tally_collector_rebind_races_total", exchange="nova") - races_before
    print(f"{len(missing)} of {count} lost across {RESTARTS} restarts, {races:.0f} races counted")
    assert races <= RESTARTS
    assert not missing or races > 0, f"{len(missing)} of {count} lost and no race counted"
    # Each restart ends the consuming connection (unless it came before the collector was back).
    assert 1 <= _metric("tally_collector_connections_lost_total") - lost_before <= RESTARTS


async def test_broker_restarts_lose_nothing_when_the_broker_loads_the_definitions(
    defined_node: BrokerNode, tmp_path: Path
) -> None:
    """The node recreates the exchange and the binding at boot, before any service can publish."""
    url = defined_node.vhost_url(DEFINED_VHOST)
    count = 3000 * RESTARTS
    races_before = _metric("tally_collector_rebind_races_total", exchange="nova")
    over = {"osc_queue_name": DEFINED_QUEUE, "osc_topics": TOPICS, "osc_broker_definitions": True}
    dropped: set[str] = set()
    async with collecting(tmp_path, url, "nova", **over) as (sink, _):
        async with _publishing(url, "nova", count, 150, dropped) as publisher:
            restarted = await _restarting(defined_node, sink, publisher)
        await _settled(sink, count)
    assert restarted == RESTARTS, "the publisher finished before every restart was done"
    missing = _published(count, dropped) - _resources(sink)
    assert not missing, f"{len(missing)} of {count} lost across {RESTARTS} restarts"
    assert _metric("tally_collector_rebind_races_total", exchange="nova") == races_before


async def test_a_service_back_before_the_collector_is_a_counted_race(
    node: BrokerNode, vhost: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The collector held to a 4 s reconnect: a service declares its exchange and publishes right
    after the restart, into no binding of ours; the collector counts the race when it is back, and
    consumes what comes after."""
    url = node.vhost_url(vhost)
    monkeypatch.setattr(_amqp, "reconnect_delay", lambda attempt, *, refused, rng: 4.0)
    races_before = _metric("tally_collector_rebind_races_total", exchange="nova")
    async with collecting(tmp_path, url, "nova") as (sink, collector):
        await wait_for(lambda: collector.broker_problem() is None, within=10)
        await anyio.to_thread.run_sync(node.restart)
        async with service_exchanges(url, ["nova"]) as channel:
            exchange = await channel.get_exchange("nova")
            for n in range(5):
                body = v2_body(oslo_inner("compute.instance.create.end", instance_payload(f"raced-{n}")))
                await exchange.publish(oslo_message(body), routing_key="notifications.info")
            await wait_for(lambda: collector.broker_problem() is None, within=30)
            assert _metric("tally_collector_rebind_races_total", exchange="nova") == races_before + 1
            for n in range(5):
                body = v2_body(oslo_inner("compute.instance.create.end", instance_payload(f"after-{n}")))
                await exchange.publish(oslo_message(body), routing_key="notifications.info")
            await wait_for(lambda: {f"after-{n}" for n in range(5)} <= _resources(sink), within=30)


async def test_a_frozen_broker_costs_a_reconnect_and_nothing_else(
    node: BrokerNode, vhost: str, tmp_path: Path
) -> None:
    """SIGSTOP for 12 s with a 2 s heartbeat: the collector gives the connection up, tries a broker
    that accepts TCP but never answers (connect timeout), and consumes again once it is thawed. The
    node did not restart (what a network drop looks like from the collector too): no race counted."""
    url = node.vhost_url(vhost)
    count = 1500
    lost_before = _metric("tally_collector_connections_lost_total")
    races_before = _metric("tally_collector_rebind_races_total", exchange="nova")
    dropped: set[str] = set()
    async with collecting(tmp_path, url + "?heartbeat=2&connect_timeout=2", "nova") as (sink, collector):
        async with _publishing(url, "nova", count, 150, dropped):
            await wait_for(lambda: len(sink.events) >= 100, within=60)
            node.freeze()
            try:
                await anyio.sleep(12)
                assert _metric("tally_collector_connected") == 0
                assert collector.broker_problem() is not None
            finally:
                node.thaw()
        await _settled(sink, count)
        assert collector.broker_problem() is None
    assert _resources(sink) == _published(count, dropped)
    assert _metric("tally_collector_connections_lost_total") > lost_before
    assert _metric("tally_collector_rebind_races_total", exchange="nova") == races_before


async def test_a_memory_alarm_blocks_the_publisher_and_the_collector_goes_on(
    node: BrokerNode, vhost: str, tmp_path: Path
) -> None:
    url = node.vhost_url(vhost)
    count = 900
    dropped: set[str] = set()
    async with collecting(tmp_path, url, "nova") as (sink, collector):
        async with _publishing(url, "nova", count, 150, dropped):
            await wait_for(lambda: len(sink.events) >= 100, within=60)
            node.ctl("set_vm_memory_high_watermark", "0.0000001")
            try:
                taken = collector.statistics().taken
                await anyio.sleep(4)
                assert collector.broker_problem() is None  # a consumer is not blocked
                assert collector.statistics().taken >= taken
            finally:
                node.ctl("set_vm_memory_high_watermark", "0.4")
        await _settled(sink, count)
    assert _resources(sink) == _published(count, dropped)


async def test_a_cancelled_consumer_and_a_closed_channel_are_consumed_again(
    node: BrokerNode, vhost: str, tmp_path: Path
) -> None:
    """The queue deleted under the collector (the broker sends basic.cancel), then a channel the
    broker closes (an ack of a delivery it never sent): each time the collector declares, binds
    and consumes again within a second, and what is published after is all there."""
    url = node.vhost_url(vhost)
    async with collecting(tmp_path, url, "nova") as (sink, collector):
        queue = collector.settings.osc_queue_name
        lost_before = _metric("tally_collector_connections_lost_total")
        node.ctl("delete_queue", "-p", vhost, queue)
        await wait_for(lambda: _metric("tally_collector_connections_lost_total") > lost_before, within=10)
        await wait_for(lambda: collector.broker_problem() is None, within=5)
        assert collector._source is not None and collector._source._connection is not None
        await collector._source._connection.ack(10**9)
        await wait_for(lambda: _metric("tally_collector_connections_lost_total") > lost_before + 1, within=10)
        await wait_for(lambda: collector.broker_problem() is None, within=5)
        dropped: set[str] = set()
        async with _publishing(url, "nova", 300, 300, dropped):
            pass
        await _settled(sink, 300)
    assert _resources(sink) == _published(300, dropped)
