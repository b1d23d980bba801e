"""Collector throughput: notifications/s from RabbitMQ to committed outbox and acked, against two floors.

Every round publishes the same notifications to a topic exchange bound to three queues, on a vhost
the run makes (``rabbitmqctl``) and deletes, then reads each queue with one consumer:

- the batched floor: a bare aio-pika consumer that acks like the collector, one ``multiple`` ack
  per half prefetch window, and does nothing else (the fair floor: the cost of the broker and
  the client library alone);
- oslo.messaging's own batching notification listener (``get_batch_notification_listener``,
  threading executor, batches of the prefetch), what a service written on oslo would do;
- the collector, the real thing: AMQP source, decode, map, group commit to the SQLite outbox
  (WAL, synchronous=FULL), ack after commit, and the sender delivering to a sink that accepts
  everything, under the daemon's garbage-collector policy.

Each round runs the three in turn; the medians over rounds are compared, per CPU-second of the
consuming process (the wall-clock ratios are printed too). Targets: the collector at least 1.0 x
the batched floor and at least 3 x the oslo listener; a missed target exits 1. TLS is not
measured here (the machine's broker has no TLS listener).

    python -m bench.collector [--quick] [-n N] [--prefetch P] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
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
        # oslo's listener skips a _unique_id it has seen; each notification has its own, as on the wire.
        inner["_unique_id"] = uuid.uuid4().hex
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
    every = max(prefetch // 2, 1)
    async with connection:
        channel = await connection.channel()
        await channel.set_qos(prefetch_count=prefetch)
        queue = await channel.declare_queue(queue_name, passive=True)

        async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            nonlocal count
            count += 1
            if count % every == 0 or count == n:
                await message.ack(multiple=True)
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
        # Timed from consume on, as the floors are: connecting, declaring and binding are not
        # what the comparison is about.
        collector: Collector = await tg.start(partial(serve_collector, settings, sink=AcceptAll()))
        started, cpu = time.perf_counter(), time.process_time()
        # Polling the collector's own counters: reading the metrics registry would cost more CPU
        # (it collects every metric, /proc included) than the work being measured.
        while collector.statistics().acked < n:  # noqa: ASYNC110
            await anyio.sleep(0.005)
        elapsed, cpu_s = time.perf_counter() - started, time.process_time() - cpu
        tg.cancel_scope.cancel()
    return elapsed, cpu_s


def oslo_run(url: str, exchange: str, n: int, prefetch: int) -> tuple[float, float]:
    """oslo.messaging's batching notification listener on queue ``notifications.info`` (oslo's own
    name for topic ``notifications``, priority info) until it has taken ``n``. Run in a process of
    its own (``--oslo-listener``): its threads outlive ``stop()`` and would hold this one open."""
    import oslo_messaging
    from oslo_config import cfg

    conf = cfg.ConfigOpts()
    conf([], project="tally-bench")
    transport = oslo_messaging.get_notification_transport(conf, url=url.replace("amqp://", "rabbit://", 1))
    done = threading.Event()
    taken = 0
    finished: list[tuple[float, float]] = []

    class Endpoint:
        def info(self, messages: list[dict[str, Any]]) -> None:
            nonlocal taken
            taken += len(messages)
            if taken >= n:
                finished.append((time.perf_counter() - started, time.process_time() - cpu))
                done.set()

    target = oslo_messaging.Target(topic="notifications", exchange=exchange)
    listener = oslo_messaging.get_batch_notification_listener(
        transport, [target], [Endpoint()], executor="threading", batch_size=prefetch, batch_timeout=1
    )
    started, cpu = time.perf_counter(), time.process_time()
    listener.start()
    if not done.wait(timeout=600):
        raise SystemExit(f"the oslo listener took {taken} of {n} in 600 s")
    return finished[0]


def rabbitmqctl(*args: str) -> None:
    subprocess.run(["rabbitmqctl", *args], check=True, capture_output=True, timeout=120)


async def one_round(url: str, n: int, prefetch: int) -> dict[str, tuple[float, float]]:
    tag = uuid.uuid4().hex[:8]
    exchange, floor_q, coll_q = f"bench-{tag}-nova", f"bench-{tag}-floor", f"bench-{tag}-collector"
    connection = await aio_pika.connect(url)
    async with connection:
        channel = await connection.channel()
        await channel.declare_exchange(exchange, aio_pika.ExchangeType.TOPIC, durable=False)
        for name, durable in ((floor_q, True), (coll_q, True), (OSLO_QUEUE, False)):
            queue = await channel.declare_queue(name, durable=durable)
            await queue.bind(exchange, routing_key="notifications.info")
        try:
            await publish_all(url, exchange, bodies(n))
            for name in (floor_q, coll_q, OSLO_QUEUE):
                await wait_ready(url, name, n)
            results = {"floor": await floor_run(url, floor_q, n, prefetch)}
            with tempfile.TemporaryDirectory() as state:
                results["collector"] = await collector_run(url, exchange, coll_q, n, prefetch, Path(state))
            done = await anyio.run_process(
                [
                    sys.executable,
                    "-m",
                    "bench.collector",
                    "--oslo-listener",
                    url,
                    exchange,
                    str(n),
                    str(prefetch),
                ],
                stderr=subprocess.DEVNULL,
            )
            wall, cpu = json.loads(done.stdout.decode().strip().splitlines()[-1])
            results["oslo"] = (float(wall), float(cpu))
        finally:
            for name in (floor_q, coll_q, OSLO_QUEUE):
                await channel.queue_delete(name)
            await channel.exchange_delete(exchange)
    return results


OSLO_QUEUE = "notifications.info"
RUNS = (
    ("floor", "batched floor (aio-pika, multiple acks)"),
    ("oslo", "oslo batching notification listener"),
    ("collector", "collector (decode, map, commit, ack)"),
)


async def main_async(n: int, prefetch: int, rounds: int, quick: bool) -> int:
    vhost = f"tally-bench-{uuid.uuid4().hex[:8]}"
    rabbitmqctl("add_vhost", vhost)
    try:
        rabbitmqctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*")
        url = f"{AMQP_URL}{vhost}"
        load = os.getloadavg()[0]
        print(
            f"collector benchmark: {n} notifications, prefetch {prefetch}, {rounds} rounds, load {load:.1f}"
        )
        print(f"{'round':<6}{'run':<42}{'seconds':>9}{'notif/s':>10}{'cpu s':>8}{'notif/cpu-s':>13}")
        rates: dict[str, list[float]] = {key: [] for key, _ in RUNS}
        cpu_rates: dict[str, list[float]] = {key: [] for key, _ in RUNS}
        for number in range(1, rounds + 1):
            results = await one_round(url, n, prefetch)
            for key, name in RUNS:
                wall, cpu = results[key]
                rates[key].append(n / wall)
                cpu_rates[key].append(n / cpu if cpu else 0.0)
                print(f"{number:<6}{name:<42}{wall:>9.2f}{n / wall:>10.0f}{cpu:>8.2f}{n / cpu:>13.0f}")
    finally:
        rabbitmqctl("delete_vhost", vhost)
    median = {key: statistics.median(values) for key, values in rates.items()}
    per_cpu = {key: statistics.median(values) for key, values in cpu_rates.items()}
    print(f"RATIO collector_per_s={median['collector']:.0f}")
    print(f"RATIO collector_per_cpu_s={per_cpu['collector']:.0f}")
    print(f"RATIO wall_collector_vs_batched_floor={median['collector'] / median['floor']:.2f}")
    print(f"RATIO wall_collector_vs_oslo_listener={median['collector'] / median['oslo']:.2f}")
    # The targets are judged per CPU-second: on this shared machine the wall clock measures the
    # neighbours as much as the code (docs/benchmarks.md shows both).
    vs_floor = per_cpu["collector"] / per_cpu["floor"]
    vs_oslo = per_cpu["collector"] / per_cpu["oslo"]
    print(f"RATIO collector_vs_batched_floor={vs_floor:.2f}")
    print(f"RATIO collector_vs_oslo_listener={vs_oslo:.2f}")
    # --quick (CI: 3,000 notifications, rounds of a third of a second on a shared host) holds a
    # regression floor below the targets; the full run holds the targets themselves.
    floor_target, oslo_target = (
        (QUICK_FLOOR_TARGET, QUICK_OSLO_TARGET) if quick else (FLOOR_TARGET, OSLO_TARGET)
    )
    missed = []
    if vs_floor < floor_target:
        missed.append(f"collector vs batched floor {vs_floor:.2f} < {floor_target} (per CPU-second)")
    if vs_oslo < oslo_target:
        missed.append(f"collector vs oslo listener {vs_oslo:.2f} < {oslo_target} (per CPU-second)")
    for line in missed:
        print(f"TARGET MISSED: {line}")
    return 1 if missed else 0


FLOOR_TARGET = 1.0
OSLO_TARGET = 3.0
QUICK_FLOOR_TARGET = 0.8
QUICK_OSLO_TARGET = 2.0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a small run for CI")
    parser.add_argument("-n", type=int, default=None, help="notifications (default 50000; 3000 with --quick)")
    parser.add_argument("--prefetch", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 3)")
    parser.add_argument(
        "--oslo-listener", nargs=4, metavar=("URL", "EXCHANGE", "N", "PREFETCH"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.oslo_listener:
        url, exchange, count, window = args.oslo_listener
        print(json.dumps(oslo_run(url, exchange, int(count), int(window))), flush=True)
        os._exit(0)  # oslo's threads do not end with the listener
    n = args.n or (3000 if args.quick else 50_000)
    rounds = args.rounds or 3
    # The collector runs under the daemon's garbage-collector policy, as `tally collector` would apply it.
    tune_garbage_collector()
    sys.exit(anyio.run(main_async, n, args.prefetch, rounds, args.quick))


if __name__ == "__main__":
    main()
