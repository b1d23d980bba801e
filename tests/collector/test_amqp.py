"""The collector on the machine's RabbitMQ, with notifications on the wire exactly as oslo puts them."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote, urlsplit

import aio_pika
import anyio
import pytest
from collector_support import (
    MemorySink,
    delete_queue,
    fixtures,
    instance_payload,
    oslo_inner,
    publish,
    service_exchanges,
    settings,
    v2_body,
)
from prometheus_client import REGISTRY

from tally.collector import Collector, CollectorError
from tally.config import Settings

pytestmark = [pytest.mark.anyio, pytest.mark.rabbitmq]


def _metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def _wait_for(predicate: Callable[[], bool], within: float = 15.0) -> None:
    """Poll state that lives outside this task (a sink, a metric, the broker)."""
    with anyio.fail_after(within):
        while not predicate():  # noqa: ASYNC110
            await anyio.sleep(0.02)


async def _ready_messages(url: str, name: str) -> int:
    connection = await aio_pika.connect(url)
    try:
        channel = await connection.channel()
        queue = await channel.declare_queue(name, passive=True)
        return int(queue.declaration_result.message_count or 0)
    finally:
        await connection.close()


def _instance_create(resource_id: str, **extra: object) -> bytes:
    payload = instance_payload(resource_id)
    return v2_body(oslo_inner("compute.instance.create.end", payload, **extra))


async def test_each_of_the_26_types_maps_to_the_spec_event(
    amqp_url: str, unique: str, tmp_path: Path
) -> None:
    cases = fixtures()
    names = {s: f"{unique}-{s}" for s in sorted({c["notification"]["exchange"] for c in cases})}
    sink = MemorySink()
    conf = settings(tmp_path, amqp_url, unique, list(names.values()))
    skipped_before = _metric(
        "tally_collector_skipped_total", event_type="compute.instance.resize.end", reason="resize_source_host"
    )
    expected = [c["expected"] for c in cases if "skipped" not in c["expected"]]
    try:
        async with (
            service_exchanges(amqp_url, list(names.values())) as channel,
            anyio.create_task_group() as tg,
        ):
            collector: Collector = await tg.start(Collector(conf, sink=sink).serve)
            for case in cases:
                n = case["notification"]
                await publish(channel, names[n["exchange"]], json.dumps(n["body"]).encode(), n["routing_key"])
            await _wait_for(lambda: len(sink.events) >= len(expected) and collector.health().depth == 0)
            tg.cancel_scope.cancel()
        assert await _ready_messages(amqp_url, conf.osc_queue_name) == 0  # every one acked
    finally:
        await delete_queue(amqp_url, conf.osc_queue_name)
    assert len({e["payload"]["provider"]["oslo_event_type"] for e in expected}) == 26
    assert {e["event_id"]: e for e in sink.events.values()} == {e["event_id"]: e for e in expected}
    assert (
        _metric(
            "tally_collector_skipped_total",
            event_type="compute.instance.resize.end",
            reason="resize_source_host",
        )
        - skipped_before
        == 1
    )


async def test_bad_input_is_acked_counted_and_never_blocks(
    amqp_url: str, unique: str, tmp_path: Path
) -> None:
    exchange = f"{unique}-nova"
    sink = MemorySink()
    conf = settings(tmp_path, amqp_url, unique, [exchange])
    reasons = ("json", "envelope", "timestamp", "oversized", "encoding")
    before = {r: _metric("tally_collector_unparseable_total", reason=r) for r in reasons}
    no_stamp = oslo_inner("compute.instance.create.end", {})
    del no_stamp["timestamp"]
    bad = [
        v2_body(oslo_inner("compute.instance.create.end", {}))[:60],  # truncated JSON
        json.dumps({"oslo.version": "2.0", "oslo.message": {"not": "a string"}}).encode(),  # wrong envelope
        v2_body(no_stamp),  # missing timestamp
        v2_body(oslo_inner("compute.instance.create.end", {}, timestamp="01/03/2026 10:00")),  # unparseable
        v2_body(oslo_inner("compute.instance.create.end", {"pad": "x" * (1024 * 1024)})),  # over 1 MiB
        b'{"oslo.version": "2.0", "oslo.message": "\xc3\x28"}',  # not UTF-8
    ]
    wrong_types = _instance_create("vm-wrong", message_id="wrong-types").replace(
        b'\\"vcpus\\": 1', b'\\"vcpus\\": \\"one\\"'
    )
    try:
        async with service_exchanges(amqp_url, [exchange]) as channel, anyio.create_task_group() as tg:
            await tg.start(Collector(conf, sink=sink).serve)
            for body in bad:
                await publish(channel, exchange, body, "notifications.error")
            await publish(channel, exchange, wrong_types)
            await publish(channel, exchange, _instance_create("vm-good", message_id="good"))
            await _wait_for(lambda: {"good", "wrong-types"} <= {k[0] for k in sink.events})
            tg.cancel_scope.cancel()
        assert await _ready_messages(amqp_url, conf.osc_queue_name) == 0
    finally:
        await delete_queue(amqp_url, conf.osc_queue_name)
    delta = {r: _metric("tally_collector_unparseable_total", reason=r) - before[r] for r in reasons}
    assert delta == {"json": 1, "envelope": 1, "timestamp": 2, "oversized": 1, "encoding": 1}
    # A payload of the wrong types still becomes an event: the Reporting API refuses it with a reason.
    wrong = next(e for (event_id, _), e in sink.events.items() if event_id == "wrong-types")
    assert "vcpus" not in wrong["payload"]["size"]


async def test_declares_the_exchanges_as_oslo_does_and_binds_at_once(
    amqp_url: str, unique: str, tmp_path: Path
) -> None:
    """No service has published yet: the collector declares the exchanges (topic, not durable) and
    binds, so the first notification a service sends is already routed to its queue."""
    names = [f"{unique}-nova", f"{unique}-octavia"]
    sink = MemorySink()
    conf = settings(tmp_path, amqp_url, unique, names)
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(Collector(conf, sink=sink).serve)
            assert _metric("tally_collector_connected") == 1
            # The services' own declaration (durable=False) matches the collector's.
            async with service_exchanges(amqp_url, names) as channel:
                for n, name in enumerate(names):
                    await publish(channel, name, _instance_create(f"vm-{n}", message_id=f"first-{n}"))
                await _wait_for(lambda: len(sink.events) == 2)
            tg.cancel_scope.cancel()
    finally:
        await delete_queue(amqp_url, conf.osc_queue_name)
    assert {k[0] for k in sink.events} == {"first-0", "first-1"}


async def test_an_exchange_of_other_durability_fails_the_start_naming_the_setting(
    amqp_url: str, unique: str, tmp_path: Path
) -> None:
    exchange = f"{unique}-nova"
    conf = settings(tmp_path, amqp_url, unique, [exchange], osc_durable_exchanges=True)
    try:
        async with service_exchanges(amqp_url, [exchange]):
            with pytest.raises(CollectorError, match=r"PRECONDITION_FAILED.*TALLY_OSC_DURABLE_EXCHANGES"):
                await _serve_until_error(conf)
    finally:
        await delete_queue(amqp_url, conf.osc_queue_name)


async def _serve_until_error(conf: Settings) -> None:
    """Run the collector; re-raise the one error that ended it, unwrapped from its task groups."""
    try:
        await Collector(conf, sink=MemorySink()).serve()
    except BaseExceptionGroup as group:
        while isinstance(group, BaseExceptionGroup) and len(group.exceptions) == 1:
            group = group.exceptions[0]  # type: ignore[assignment]
        raise group from None


async def test_a_missing_exchange_fails_when_required(amqp_url: str, unique: str, tmp_path: Path) -> None:
    present, missing = f"{unique}-nova", f"{unique}-octavia"
    conf = settings(tmp_path, amqp_url, unique, [present, missing], osc_require_exchanges=True)
    async with service_exchanges(amqp_url, [present]):
        with pytest.raises(CollectorError, match=f"exchanges {missing} do not exist.*REQUIRE_EXCHANGES=true"):
            await _serve_until_error(conf)


async def test_quorum_queue_and_queue_gauges(amqp_url: str, unique: str, tmp_path: Path) -> None:
    exchange = f"{unique}-nova"
    conf = settings(tmp_path, amqp_url, unique, [exchange], osc_queue_type="quorum")
    sink = MemorySink()
    try:
        async with service_exchanges(amqp_url, [exchange]) as channel, anyio.create_task_group() as tg:
            await tg.start(Collector(conf, sink=sink).serve)
            await _wait_for(lambda: _metric("tally_collector_queue_consumers") == 1)
            await publish(channel, exchange, _instance_create("vm-q"))
            await _wait_for(lambda: len(sink.events) == 1)
            vhost = unquote(urlsplit(amqp_url).path[1:])
            listed = await anyio.run_process(
                ["rabbitmqctl", "list_queues", "-p", vhost, "name", "type", "durable"]
            )
            listing = listed.stdout.decode()
            tg.cancel_scope.cancel()
    finally:
        await delete_queue(amqp_url, conf.osc_queue_name)
    line = next(row for row in listing.splitlines() if row.startswith(conf.osc_queue_name))
    assert line.split() == [conf.osc_queue_name, "quorum", "true"]


async def test_consuming_pauses_at_the_buffer_limit_and_resumes(
    amqp_url: str, unique: str, tmp_path: Path
) -> None:
    exchange = f"{unique}-nova"
    conf = settings(tmp_path, amqp_url, unique, [exchange], osc_buffer_max_events=10, osc_prefetch=5)
    sink = MemorySink()
    sink.fail_next = 10**9  # the sink is down
    try:
        async with service_exchanges(amqp_url, [exchange]) as channel, anyio.create_task_group() as tg:
            collector: Collector = await tg.start(Collector(conf, sink=sink).serve)
            for n in range(40):
                await publish(channel, exchange, _instance_create(f"vm-{n}"))
            await _wait_for(lambda: _metric("tally_collector_paused") == 1)
            await anyio.sleep(0.5)
            depth = collector.health().depth
            assert 10 <= depth <= 15  # one group of at most the prefetch may land after the check
            assert await _ready_messages(amqp_url, conf.osc_queue_name) >= 40 - depth - 5
            sink.fail_next = 0  # the sink is back
            await _wait_for(lambda: len(sink.events) == 40)
            await _wait_for(lambda: _metric("tally_collector_paused") == 0)
            tg.cancel_scope.cancel()
    finally:
        await delete_queue(amqp_url, conf.osc_queue_name)


def _close_connections_named(prefix: str) -> int:
    listing = subprocess.run(
        ["rabbitmqctl", "list_connections", "pid", "client_properties", "--no-table-headers", "-q"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    closed = 0
    for row in listing.splitlines():
        pid, _, properties = row.partition("\t")
        if prefix in properties:
            subprocess.run(["rabbitmqctl", "close_connection", pid, "test"], capture_output=True, check=True)
            closed += 1
    return closed


async def test_reconnects_after_the_broker_drops_it_without_loss(
    amqp_url: str, unique: str, tmp_path: Path
) -> None:
    exchange = f"{unique}-nova"
    conf = settings(tmp_path, amqp_url, unique, [exchange])
    sink = MemorySink()
    lost_before = _metric("tally_collector_connections_lost_total")
    try:
        async with service_exchanges(amqp_url, [exchange]) as channel, anyio.create_task_group() as tg:
            await tg.start(Collector(conf, sink=sink).serve)
            for n in range(200):
                await publish(channel, exchange, _instance_create(f"vm-{n}", message_id=f"m-{n}"))
            assert (
                await anyio.to_thread.run_sync(
                    _close_connections_named, f"tally-collector {conf.osc_queue_name}"
                )
                == 1
            )
            for n in range(200, 400):
                await publish(channel, exchange, _instance_create(f"vm-{n}", message_id=f"m-{n}"))
            await _wait_for(lambda: len(sink.events) == 400, within=30)
            tg.cancel_scope.cancel()
        assert await _ready_messages(amqp_url, conf.osc_queue_name) == 0
    finally:
        await delete_queue(amqp_url, conf.osc_queue_name)
    assert {k[0] for k in sink.events} == {f"m-{n}" for n in range(400)}
    assert _metric("tally_collector_connections_lost_total") == lost_before + 1
