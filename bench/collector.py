"""Collector throughput: notifications/s from RabbitMQ to committed outbox and acked, against two floors,
over plain AMQP and over TLS.

The run starts a RabbitMQ node of its own (``tally.testing.rabbit_node``) with a plain listener
and a TLS listener whose certificate a CA made for the run signs. Every round publishes the same
notifications (over the plain listener) to a topic exchange bound to three queues, then reads each
queue with one consumer, all three over the round's transport:

- the batched floor: a bare aio-pika consumer that acks like the collector, one ``multiple`` ack
  per half prefetch window, and does nothing else (the fair floor: the cost of the broker and
  the client library alone);
- oslo.messaging's own batching notification listener (``get_batch_notification_listener``,
  threading executor, batches of the prefetch), what a service written on oslo would do;
- the collector, the real thing: AMQP source, decode, map, group commit to the SQLite outbox
  (WAL, synchronous=FULL), ack after commit, and the sender delivering to a sink that accepts
  everything, under the daemon's garbage-collector policy.

Rounds alternate plain and TLS (plain 1, TLS 1, plain 2, ...), so that both see the same drift of
a shared machine. The medians over rounds are compared per transport, per CPU-second of the
consuming process (the wall-clock ratios are printed too). Targets, on each transport: the
collector at least 1.0 x the batched floor and at least 3 x the oslo listener; a missed target
exits 1.

    python -m bench.collector [--quick] [-n N] [--prefetch P] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aio_pika
import anyio

from tally.app import collector as build_collector
from tally.cli import tune_garbage_collector
from tally.collector import Collector
from tally.config import Settings
from tally.outbox.internals import DeliveryResult, DeliveryStatus
from tally.testing.rabbit_node import BrokerNode, RabbitNodeUnavailable, TlsListener

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
        collector: Collector = await tg.start(build_collector(settings, sink=AcceptAll()).serve)
        started, cpu = time.perf_counter(), time.process_time()
        # Polling the collector's own counters: reading the metrics registry would cost more CPU
        # (it collects every metric, /proc included) than the work being measured.
        while collector.statistics().acked < n:  # noqa: ASYNC110
            await anyio.sleep(0.005)
        elapsed, cpu_s = time.perf_counter() - started, time.process_time() - cpu
        tg.cancel_scope.cancel()
    return elapsed, cpu_s


def oslo_run(url: str, ca: str, exchange: str, n: int, prefetch: int) -> tuple[float, float]:
    """oslo.messaging's batching notification listener on queue ``notifications.info`` (oslo's own
    name for topic ``notifications``, priority info) until it has taken ``n``; over TLS with the CA
    file ``ca`` unless it is empty. Run in a process of its own (``--oslo-listener``): its threads
    outlive ``stop()`` and would hold this one open."""
    import oslo_messaging
    from oslo_config import cfg

    conf = cfg.ConfigOpts()
    with tempfile.NamedTemporaryFile("w", suffix=".conf") as config:
        # oslo takes TLS from its configuration, not from the transport URL, as a service would.
        if ca:
            config.write(f"[oslo_messaging_rabbit]\nssl = true\nssl_ca_file = {ca}\n")
        config.flush()
        conf(["--config-file", config.name], project="tally-bench")
    transport = oslo_messaging.get_notification_transport(conf, url=url)
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


@dataclass(frozen=True)
class Transport:
    """How the three consumers of a round reach the node: each one's URL, and the CA for oslo."""

    name: str
    amqp_url: str  # the collector's and aio-pika's (amqps with ?cafile= for TLS)
    oslo_url: str
    oslo_ca: str


def transports(node: BrokerNode) -> tuple[Transport, Transport]:
    assert node.tls is not None
    tls_oslo = f"rabbit://guest:guest@127.0.0.1:{node.tls.port}/"
    return (
        Transport("plain", node.url, node.url.replace("amqp://", "rabbit://", 1), ""),
        Transport("tls", node.tls_url(), tls_oslo, str(node.tls.ca)),
    )


async def one_round(
    publish_url: str, via: Transport, n: int, prefetch: int
) -> dict[str, tuple[float, float]]:
    tag = uuid.uuid4().hex[:8]
    exchange, floor_q, coll_q = f"bench-{tag}-nova", f"bench-{tag}-floor", f"bench-{tag}-collector"
    connection = await aio_pika.connect(publish_url)
    async with connection:
        channel = await connection.channel()
        await channel.declare_exchange(exchange, aio_pika.ExchangeType.TOPIC, durable=False)
        for name, durable in ((floor_q, True), (coll_q, True), (OSLO_QUEUE, False)):
            queue = await channel.declare_queue(name, durable=durable)
            await queue.bind(exchange, routing_key="notifications.info")
        try:
            await publish_all(publish_url, exchange, bodies(n))
            for name in (floor_q, coll_q, OSLO_QUEUE):
                await wait_ready(publish_url, name, n)
            results = {"floor": await floor_run(via.amqp_url, floor_q, n, prefetch)}
            with tempfile.TemporaryDirectory() as state:
                results["collector"] = await collector_run(
                    via.amqp_url, exchange, coll_q, n, prefetch, Path(state)
                )
            command = [sys.executable, "-m", "bench.collector", "--oslo-listener", via.oslo_url]
            command += [via.oslo_ca, exchange, str(n), str(prefetch)]
            done = await anyio.run_process(command, check=False)
            if done.returncode != 0:
                said = done.stderr.decode(errors="replace").strip().splitlines() or ["no output"]
                raise SystemExit(f"bench.collector: the oslo listener ({via.name}) failed: {said[-1]}")
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


def verdict(
    name: str, wall: dict[str, list[float]], per_cpu: dict[str, list[float]], quick: bool
) -> list[str]:
    """Print one transport's RATIO lines; the targets it missed (TLS lines are prefixed ``tls_``)."""
    prefix = "" if name == "plain" else f"{name}_"
    median = {key: statistics.median(values) for key, values in wall.items()}
    cpu = {key: statistics.median(values) for key, values in per_cpu.items()}
    print(f"RATIO {prefix}collector_per_s={median['collector']:.0f}")
    print(f"RATIO {prefix}collector_per_cpu_s={cpu['collector']:.0f}")
    print(f"RATIO {prefix}wall_collector_vs_batched_floor={median['collector'] / median['floor']:.2f}")
    print(f"RATIO {prefix}wall_collector_vs_oslo_listener={median['collector'] / median['oslo']:.2f}")
    # The targets are judged per CPU-second: on this shared machine the wall clock measures the
    # neighbours as much as the code (docs/benchmarks.md shows both).
    vs_floor = cpu["collector"] / cpu["floor"]
    vs_oslo = cpu["collector"] / cpu["oslo"]
    print(f"RATIO {prefix}collector_vs_batched_floor={vs_floor:.2f}")
    print(f"RATIO {prefix}collector_vs_oslo_listener={vs_oslo:.2f}")
    # --quick (CI: 3,000 notifications, rounds of a third of a second on a shared host) holds a
    # regression floor below the targets; the full run holds the targets themselves.
    floor_target, oslo_target = (
        (QUICK_FLOOR_TARGET, QUICK_OSLO_TARGET) if quick else (FLOOR_TARGET, OSLO_TARGET)
    )
    missed = []
    if vs_floor < floor_target:
        missed.append(f"{name}: collector vs batched floor {vs_floor:.2f} < {floor_target} (per CPU-second)")
    if vs_oslo < oslo_target:
        missed.append(f"{name}: collector vs oslo listener {vs_oslo:.2f} < {oslo_target} (per CPU-second)")
    return missed


async def main_async(n: int, prefetch: int, rounds: int, quick: bool) -> int:
    with tempfile.TemporaryDirectory(prefix="tally-bench-rabbit-") as base:
        node = BrokerNode(Path(base) / "node", tls=TlsListener.make(Path(base) / "pki"))
        try:
            await anyio.to_thread.run_sync(node.start)
        except RabbitNodeUnavailable as exc:
            print(f"bench.collector: {exc}; the benchmark starts a RabbitMQ node of its own", file=sys.stderr)
            return 2
        try:
            return await measure(node, n, prefetch, rounds, quick)
        finally:
            await anyio.to_thread.run_sync(node.stop)


async def measure(node: BrokerNode, n: int, prefetch: int, rounds: int, quick: bool) -> int:
    load = os.getloadavg()[0]
    print(f"collector benchmark: {n} notifications, prefetch {prefetch}, {rounds} rounds, load {load:.1f}")
    print(f"{'round':<6}{'via':<6}{'run':<42}{'seconds':>9}{'notif/s':>10}{'cpu s':>8}{'notif/cpu-s':>13}")
    modes = transports(node)
    rates: dict[str, dict[str, list[float]]] = {via.name: {key: [] for key, _ in RUNS} for via in modes}
    cpu_rates: dict[str, dict[str, list[float]]] = {via.name: {key: [] for key, _ in RUNS} for via in modes}
    for number in range(1, rounds + 1):
        for via in modes:
            results = await one_round(node.url, via, n, prefetch)
            for key, name in RUNS:
                wall, cpu = results[key]
                rates[via.name][key].append(n / wall)
                cpu_rates[via.name][key].append(n / cpu if cpu else 0.0)
                line = f"{number:<6}{via.name:<6}{name:<42}{wall:>9.2f}{n / wall:>10.0f}{cpu:>8.2f}"
                print(f"{line}{n / cpu:>13.0f}", flush=True)
    print(f"load {os.getloadavg()[0]:.1f} at the end")
    missed = [
        line for via in modes for line in verdict(via.name, rates[via.name], cpu_rates[via.name], quick)
    ]
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
        "--oslo-listener", nargs=5, metavar=("URL", "CA", "EXCHANGE", "N", "PREFETCH"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.oslo_listener:
        url, ca, exchange, count, window = args.oslo_listener
        print(json.dumps(oslo_run(url, ca, exchange, int(count), int(window))), flush=True)
        os._exit(0)  # oslo's threads do not end with the listener
    n = args.n or (3000 if args.quick else 50_000)
    rounds = args.rounds or 3
    # The collector runs under the daemon's garbage-collector policy, as `tally collector` would apply it.
    tune_garbage_collector()
    sys.exit(anyio.run(main_async, n, args.prefetch, rounds, args.quick))


if __name__ == "__main__":
    main()
