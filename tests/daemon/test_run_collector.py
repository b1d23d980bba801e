"""``tally run`` with TALLY_OSC_AMQP_URL: the collector, on the machine's RabbitMQ, books into the store.

The exchange is a topic exchange of a unique name, declared by the test as an OpenStack service
declares it; the notification goes on the wire as oslo.messaging puts it there (a v2 envelope).
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import aio_pika
import anyio
import httpx
import pytest
from daemon_exchange import clean_up, declare
from daemon_support import daemon_env, free_port, running_daemon, secret, tally, wait_until_ready

INSTANCE_ID = "178b0921-0000-4000-8000-00000000c011"


def notification() -> bytes:
    inner = {
        "message_id": str(uuid.uuid4()),
        "publisher_id": "compute.cmp-01",
        "event_type": "compute.instance.create.end",
        "priority": "INFO",
        "payload": {
            "instance_id": INSTANCE_ID,
            "tenant_id": "6f70aa",
            "instance_type": "m1.large",
            "memory_mb": 8192,
            "vcpus": 4,
            "root_gb": 80,
            "disk_gb": 80,
            "state": "active",
            "created_at": "2026-03-01 09:59:40+00:00",
            "launched_at": "2026-03-01T10:00:00.000000",
        },
        "timestamp": "2026-03-01 10:00:00.123456",
        "_context_project_id": "ctxproj",
        "_unique_id": uuid.uuid4().hex,
    }
    return json.dumps({"oslo.version": "2.0", "oslo.message": json.dumps(inner)}).encode()


async def publish(url: str, exchange: str, body: bytes) -> None:
    connection = await aio_pika.connect(url)
    async with connection:
        channel = await connection.channel()
        target = await channel.get_exchange(exchange, ensure=False)
        message = aio_pika.Message(
            body,
            content_type="application/json",
            content_encoding="utf-8",
            delivery_mode=aio_pika.DeliveryMode.NOT_PERSISTENT,
        )
        await target.publish(message, routing_key="notifications.info")


@pytest.mark.rabbitmq
def test_a_notification_on_rabbitmq_appears_through_the_api(tmp_path: Path, amqp_url: str) -> None:
    unique = uuid.uuid4().hex[:10]
    exchange, queue = f"tally-test-nova-{unique}", f"tally-test-run-{unique}"
    anyio.run(declare, amqp_url, exchange, backend="asyncio")
    env = daemon_env(
        tmp_path / "state",
        free_port(),
        TALLY_OSC_AMQP_URL=amqp_url,
        TALLY_OSC_EXCHANGES=exchange,
        TALLY_OSC_QUEUE_NAME=queue,
        TALLY_OSC_CLOUD="os-dev",
        TALLY_OSC_FLUSH_INTERVAL_S="0.2",
    )
    try:
        with running_daemon(env) as daemon:
            checks = wait_until_ready(daemon.base_url)
            assert checks["collector"]["ok"] is True, checks
            admin = secret(env, "token", "create", "--role", "admin")
            anyio.run(publish, amqp_url, exchange, notification(), backend="asyncio")
            deadline = time.monotonic() + 20
            items: list[dict[str, object]] = []
            while not items:
                answer = httpx.get(
                    f"{daemon.base_url}/api/v1/resources", headers={"Authorization": f"Bearer {admin}"}
                )
                items = answer.json()["items"]
                assert time.monotonic() < deadline, "the notification never reached the store"
                time.sleep(0.1)
            [row] = items
            assert (row["resource_id"], row["cloud"], row["state"]) == (INSTANCE_ID, "os-dev", "active")
            assert row["size"] == {"vcpus": 4, "ram_gb": 8, "disk_gb": 80, "flavor": "m1.large"}
            assert daemon.stop() == 0, daemon.log
        assert "actors=store,current-resources,http,collector" in daemon.log
        # Stopped in reverse: the collector before the HTTP front end, the store last.
        stopped = [line.rsplit("actor=", 1)[1] for line in daemon.log.splitlines() if "actor stopped" in line]
        assert stopped == ["collector", "http", "current-resources", "store"]
    finally:
        anyio.run(clean_up, amqp_url, exchange, queue, backend="asyncio")


def test_an_unreachable_broker_keeps_the_daemon_up_and_not_ready_saying_why(tmp_path: Path) -> None:
    """A broker that is down is an outage, not a configuration error: the daemon stays up, its
    /readyz says why the collector does not consume, and SIGTERM still drains it with exit 0."""
    env = daemon_env(tmp_path / "state", free_port(), TALLY_OSC_AMQP_URL="amqp://guest:sekrit@127.0.0.1:1/")
    with running_daemon(env) as daemon:
        deadline = time.monotonic() + 20
        while True:
            answer = httpx.get(f"{daemon.base_url}/readyz", timeout=5)
            detail = str(answer.json()["checks"].get("collector", {}).get("detail", ""))
            if "broker unavailable" in detail or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert answer.status_code == 503
        assert "broker unavailable: cannot connect to 127.0.0.1:1" in detail
        assert daemon.stop() == 0, daemon.log
    assert "sekrit" not in daemon.log and "actor crashed" not in daemon.log


def test_a_broken_broker_url_refuses_the_daemon_in_one_line(tmp_path: Path) -> None:
    env = daemon_env(
        tmp_path / "state",
        free_port(),
        TALLY_OSC_AMQP_URL="rabbit://guest:sekrit@h1:5672,guest:sekrit@:5672/",
    )
    done = tally(env, "run")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "tally: TALLY_OSC_AMQP_URL rabbit://guest:***@h1:5672,guest:***@:5672/: "
        "the AMQP URL's host 2 (':5672') has no usable host name"
    )


@pytest.mark.rabbitmq
@pytest.mark.parametrize(
    ("fault", "named"),
    [
        ("password", "403 ACCESS_REFUSED"),
        ("vhost", "530 NOT_ALLOWED"),
    ],
)
def test_a_broker_refusal_at_start_is_exit_2_in_one_line(
    fault: str, named: str, amqp_url: str, tmp_path: Path
) -> None:
    """What only the broker can refuse (the login, the vhost) is a configuration error too: exit 2,
    one line naming it, no actor restarted in vain and no secret in the output."""
    url = {
        "password": amqp_url.replace(":guest@", ":sekrit@"),
        "vhost": amqp_url.rsplit("/", 1)[0] + f"/no-such-vhost-{uuid.uuid4().hex[:8]}",
    }[fault]
    env = daemon_env(tmp_path / "state", free_port(), TALLY_OSC_AMQP_URL=url)
    started = time.monotonic()
    done = tally(env, "run")
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("tally: ") and named in last, done.stderr
    assert "sekrit" not in done.stderr and "actor crashed" not in done.stderr
    assert time.monotonic() - started < 30
