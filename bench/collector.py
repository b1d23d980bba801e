"""Collector throughput: notifications/s from RabbitMQ to committed outbox and acked, against a floor.

The floor is a bare aio-pika consumer that only acks, reading the same
messages (a second queue bound to the same exchange) in the same run with the
same prefetch. The collector run is the real thing: AMQP source, decode, map,
group commit to the SQLite outbox (WAL, synchronous=FULL), ack after commit,
and the sender delivering to a sink that accepts everything. Both run under the
daemon's garbage-collector policy (``tally.daemon.tune_garbage_collector``).

    python -m bench.collector [--quick] [-n N] [--prefetch P]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import uuid
from functools import partial
from pathlib import Path
from typing import Any

import aio_pika
import anyio

from tally.collector import Collector, serve_collector
from tally.config import Settings
from tally.daemon import tune_garbage_collector
from tally.outbox import DeliveryResult, DeliveryStatus

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/"
FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "collector" / "fixtures"


class AcceptAll:
    async def deliver(self, items: list[dict[str, Any]]) -> DeliveryResult:
        return DeliveryResult(DeliveryStatus.ACCEPTED, accepted=len(items))


def bodies(n: int) -> list[bytes]:
    """n oslo v2 bodies cycling through the spec's 26 golden cases, each with its own message_id."""
    cases = [json.loads(p.read_text())["notification"]["body"] for p in sorted(FIXTURES.glob("*.json"))]
    out = []
    for i in range(n):
        inner = json.loads(cases[i % len(cases)]["oslo.message"])
        inner["message_id"] = str(uuid.uuid4())
        out.append(json.dumps({"oslo.version": "2.0", "oslo.message": json.dumps(inner)}).encode())
    return out


async def publish_all(url: str, exchange: str, payloads: list[bytes]) -> None:
    connection = await aio_pika.connect(url)
    async with connection:
        channel = await connection.channel(publisher_confirms=False)
        target = await channel.get_exchange(exchange)
        for body in payloads:
            message = aio_pika.Message(body, content_type="application/json", content_encoding="utf-8")
            await target.publish(message, routing_key="notifications.info")
        # A confirm round trip makes sure the broker has routed everything before timing starts.
        confirm = await connection.channel(publisher_confirms=True)
        await (await confirm.get_exchange(exchange)).publish(
            aio_pika.Message(b"{}"), routing_key="bench.none"
        )


async def wait_ready(url: str, queue: str, n: int) -> None:
    connection = await aio_pika.connect(url)
    async with connection:
        channel = await connection.channel()
        while True:
            declared = await channel.declare_queue(queue, passive=True)
            if (declared.declaration_result.message_count or 0) >= n:
                return
            await anyio.sleep(0.05)


async def floor_run(url: str, queue_name: str, n: int, prefetch: int) -> tuple[float, float]:
    connection = await aio_pika.connect(url)
    done = anyio.Event()
    count = 0
    async with connection:
        channel = await connection.channel()
        await channel.set_qos(prefetch_count=prefetch)
        queue = await channel.declare_queue(queue_name, passive=True)

        async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            nonlocal count
            await message.ack()
            count += 1
            if count == n:
                done.set()

        started, cpu = time.perf_counter(), time.process_time()
        await queue.consume(on_message)
        await done.wait()
        return time.perf_counter() - started, time.process_time() - cpu


async def collector_run(
    url: str, exchange: str, queue_name: str, n: int, prefetch: int, state: Path
) -> tuple[float, float]:
    settings = Settings(
        state_dir=state,
        osc_amqp_url=url,
        osc_exchanges=exchange,
        osc_queue_name=queue_name,
        osc_prefetch=prefetch,
        osc_flush_interval_s=1.0,
        osc_buffer_path=state / "outbox.sqlite3",
    )
    async with anyio.create_task_group() as tg:
        started, cpu = time.perf_counter(), time.process_time()
        collector: Collector = await tg.start(partial(serve_collector, settings, sink=AcceptAll()))
        # Polling the collector's own counters: reading the metrics registry would cost more CPU
        # (it collects every metric, /proc included) than the work being measured.
        while collector.statistics().acked < n:  # noqa: ASYNC110
            await anyio.sleep(0.005)
        elapsed, cpu_s = time.perf_counter() - started, time.process_time() - cpu
        tg.cancel_scope.cancel()
    return elapsed, cpu_s


async def main_async(n: int, prefetch: int) -> None:
    tag = uuid.uuid4().hex[:8]
    exchange, floor_q, coll_q = f"bench-{tag}-nova", f"bench-{tag}-floor", f"bench-{tag}-collector"
    connection = await aio_pika.connect(AMQP_URL)
    async with connection:
        channel = await connection.channel()
        await channel.declare_exchange(exchange, aio_pika.ExchangeType.TOPIC, durable=False)
        for name in (floor_q, coll_q):
            queue = await channel.declare_queue(name, durable=True)
            await queue.bind(exchange, routing_key="notifications.info")
        try:
            await publish_all(AMQP_URL, exchange, bodies(n))
            await wait_ready(AMQP_URL, floor_q, n)
            await wait_ready(AMQP_URL, coll_q, n)
            floor_s, floor_cpu = await floor_run(AMQP_URL, floor_q, n, prefetch)
            with tempfile.TemporaryDirectory() as state:
                collector_s, collector_cpu = await collector_run(
                    AMQP_URL, exchange, coll_q, n, prefetch, Path(state)
                )
        finally:
            for name in (floor_q, coll_q):
                await channel.queue_delete(name)
            await channel.exchange_delete(exchange)
    floor_rate, collector_rate = n / floor_s, n / collector_s
    load = os.getloadavg()[0]
    print(f"collector benchmark: {n} notifications, prefetch {prefetch}, synchronous=FULL, load {load:.1f}")
    print(f"{'run':<38}{'seconds':>9}{'notif/s':>10}{'cpu s':>8}{'notif/cpu-s':>13}")
    for name, wall, cpu in (
        ("floor (bare aio-pika, ack only)", floor_s, floor_cpu),
        ("collector (decode, map, commit, ack)", collector_s, collector_cpu),
    ):
        print(f"{name:<38}{wall:>9.2f}{n / wall:>10.0f}{cpu:>8.2f}{n / cpu:>13.0f}")
    print(f"RATIO collector_per_s={collector_rate:.0f}")
    print(f"RATIO collector_vs_floor={collector_rate / floor_rate:.2f}")
    print(f"RATIO collector_per_cpu_s={n / collector_cpu:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a small run for CI")
    parser.add_argument("-n", type=int, default=None, help="notifications (default 50000; 2000 with --quick)")
    parser.add_argument("--prefetch", type=int, default=100)
    args = parser.parse_args()
    n = args.n or (2000 if args.quick else 50_000)
    # The collector runs under the daemon's garbage-collector policy, as `tally collector` would apply it.
    tune_garbage_collector()
    anyio.run(main_async, n, args.prefetch)


if __name__ == "__main__":
    main()
