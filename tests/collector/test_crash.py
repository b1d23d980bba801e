"""Crash tests: the collector as its own process, SIGKILLed while it works, restarted each time.

What must hold afterwards: every billable notification is in the store (or the
sink) exactly once, whatever was in flight at each kill; a redelivered
notification and a re-sent batch both fold away on ``event_id``.
"""

from __future__ import annotations

import collections
import os
import random
import signal
import socket
import sqlite3
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import aio_pika
import anyio
import httpx
import pytest
from collector_support import delete_queue, instance_payload, oslo_inner, service_exchanges, v2_body
from outbox_support import SinkServer

pytestmark = [pytest.mark.anyio, pytest.mark.rabbitmq]

KILLS = int(os.environ.get("TALLY_TEST_KILLS", "3"))
KILL_NOTIFICATIONS = int(os.environ.get("TALLY_TEST_KILL_NOTIFICATIONS", "10000"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _notifications(
    unique_billable: int, noise: int, duplicates: int, seed: int
) -> tuple[list[bytes], set[str]]:
    """Bodies to publish (billable, noise and re-sent duplicates, shuffled) and the billable ids."""
    rng = random.Random(seed)
    billable = []
    for n in range(unique_billable):
        payload = instance_payload(f"vm-{n}", f"tenant-{n % 7}")
        billable.append(v2_body(oslo_inner("compute.instance.create.end", payload, message_id=f"msg-{n}")))
    noisy = [v2_body(oslo_inner("compute.instance.exists", {"instance_id": f"vm-{n}"})) for n in range(noise)]
    bodies = billable + noisy + [rng.choice(billable) for _ in range(duplicates)]
    rng.shuffle(bodies)
    return bodies, {f"msg-{n}" for n in range(unique_billable)}


async def _publish(url: str, exchange: str, bodies: list[bytes]) -> None:
    connection = await aio_pika.connect(url)
    async with connection:
        channel = await connection.channel(publisher_confirms=True)
        target = await channel.get_exchange(exchange)
        for start in range(0, len(bodies), 200):
            async with anyio.create_task_group() as tg:
                for body in bodies[start : start + 200]:
                    message = aio_pika.Message(
                        body, content_type="application/json", content_encoding="utf-8"
                    )
                    tg.start_soon(partial(target.publish, message, routing_key="notifications.info"))


class CollectorProcess:
    def __init__(self, env: dict[str, str], port: int, log: Path) -> None:
        self.env = env
        self.port = port
        self.log = log
        self.proc: anyio.abc.Process | None = None

    async def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = await anyio.open_process(
                [sys.executable, "-m", "tally", "collector"], env=self.env, stdout=out, stderr=out
            )
        async with httpx.AsyncClient() as client:
            with anyio.fail_after(30):
                while True:
                    assert self.proc.returncode is None, self.log.read_text()[-3000:]
                    try:
                        if (await client.get(f"http://127.0.0.1:{self.port}/healthz")).status_code in (
                            200,
                            503,
                        ):
                            return
                    except httpx.HTTPError:
                        pass
                    await anyio.sleep(0.05)

    async def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        await self.proc.wait()

    async def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        with anyio.fail_after(20):
            return await self.proc.wait()


def _env(tmp_path: Path, url: str, exchange: str, queue: str, port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TALLY_")}
    env.update(
        TALLY_STATE_DIR=str(tmp_path),
        TALLY_OSC_AMQP_URL=url,
        TALLY_OSC_EXCHANGES=exchange,
        TALLY_OSC_QUEUE_NAME=queue,
        TALLY_OSC_CLOUD="os-crash",
        TALLY_OSC_HTTP_PORT=str(port),
        TALLY_OSC_FLUSH_INTERVAL_S="0.2",
        TALLY_LOG_LEVEL="WARNING",
    )
    env.update(extra)
    return env


def _store_ids(path: Path) -> collections.Counter[str]:
    if not path.exists():
        return collections.Counter()
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10) as db:
        try:
            return collections.Counter(r[0] for r in db.execute("SELECT event_id FROM events"))
        except sqlite3.OperationalError:
            return collections.Counter()


async def _wait_until(predicate: Callable[[], bool], within: float) -> None:
    """Poll state that lives in another process (the store file, the sink server)."""
    with anyio.fail_after(within):
        while not predicate():  # noqa: ASYNC110
            await anyio.sleep(0.2)


async def test_sigkills_leave_every_billable_event_once_in_the_store(
    amqp_url: str, unique: str, tmp_path: Path
) -> None:
    """CI: 3 kills during 10,000 notifications; the campaign of docs/collector.md is
    ``TALLY_TEST_KILLS=20 TALLY_TEST_KILL_NOTIFICATIONS=50000``."""
    exchange, queue, port = f"{unique}-nova", f"{unique}-q", _free_port()
    tenth = KILL_NOTIFICATIONS // 10
    bodies, expected = _notifications(unique_billable=8 * tenth, noise=tenth, duplicates=tenth, seed=4)
    assert len(bodies) == KILL_NOTIFICATIONS
    store = tmp_path / "tally.sqlite3"
    collector = CollectorProcess(
        _env(tmp_path, amqp_url, exchange, queue, port), port, tmp_path / "collector.log"
    )
    rng = random.Random(7)
    try:
        async with service_exchanges(amqp_url, [exchange]), anyio.create_task_group() as tg:
            await collector.start()  # declares and binds the queue before anything is published
            tg.start_soon(_publish, amqp_url, exchange, bodies)
            for _ in range(KILLS):
                await anyio.sleep(rng.uniform(0.3, 1.5))
                await collector.kill()
                await collector.start()
            await _wait_until(lambda: len(_store_ids(store)) >= len(expected), within=120 + KILLS * 10)
            assert await collector.stop() == 0
    finally:
        if collector.proc is not None and collector.proc.returncode is None:
            await collector.kill()
        await delete_queue(amqp_url, queue)
    ids = _store_ids(store)
    assert set(ids) == expected
    assert max(ids.values()) == 1
    assert "Traceback" not in (tmp_path / "collector.log").read_text()


async def test_nothing_committed_is_lost_while_the_reporting_api_is_down(
    amqp_url: str, unique: str, tmp_path: Path
) -> None:
    exchange, queue, port = f"{unique}-nova", f"{unique}-q", _free_port()
    bodies, expected = _notifications(unique_billable=2000, noise=200, duplicates=300, seed=5)
    with SinkServer(token="ingest-token") as sink:
        env = _env(
            tmp_path,
            amqp_url,
            exchange,
            queue,
            port,
            TALLY_OSC_REPORTING_URL=sink.url,
            TALLY_OSC_REPORTING_INSECURE="true",
            TALLY_OSC_TOKEN="ingest-token",
        )
        collector = CollectorProcess(env, port, tmp_path / "collector.log")
        try:
            async with service_exchanges(amqp_url, [exchange]):
                sink.fail_status = 503  # the Reporting API is down from the start
                await collector.start()
                await _publish(amqp_url, exchange, bodies)
                await anyio.sleep(1.0)
                await collector.kill()  # with rows committed to the outbox and nothing delivered
                assert not sink.events
                await collector.start()
                await anyio.sleep(0.5)
                sink.fail_status = None  # it comes back
                await _wait_until(lambda: sink.event_ids() >= expected, within=120)
                async with httpx.AsyncClient() as client:
                    health = (await client.get(f"http://127.0.0.1:{port}/healthz")).json()
                    metrics = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
                assert await collector.stop() == 0
        finally:
            if collector.proc is not None and collector.proc.returncode is None:
                await collector.kill()
            await delete_queue(amqp_url, queue)
    assert sink.event_ids() == expected
    assert sink.unauthorized == 0
    assert health["status"] == "ok"
    assert "tally_collector_batches_failed_total" in metrics
