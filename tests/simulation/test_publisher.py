"""The publisher (GET /clock progress, POST /release, the broker guard, RabbitMQ) and the lockstep."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import aio_pika
import anyio
import orjson
import pytest
from quart import Quart

from tally.collector import InProcessBus
from tally.simulation.publisher import (
    AmqpSink,
    BusSink,
    Publisher,
    PublishError,
    add_release_route,
    check_broker,
)
from tally.simulation.simulate import SimulateOptions, simulate
from tally.simulator import VirtualClock, create_fake_cloud_app, generate_month
from tally.simulator.generator import Month

pytestmark = pytest.mark.anyio


def small_month(faults: str = "held-back") -> Month:
    return generate_month(1, "2026-07", scale=0.3, days=2, faults=faults)


def served(month: Month) -> tuple[Quart, Publisher, InProcessBus]:
    clock = VirtualClock(month.period_from)
    bus = InProcessBus(max_buffer=100_000)
    app = create_fake_cloud_app(month.world, clock)
    state = app.config["FAKE_CLOUD"]
    publisher = Publisher(month.notifications, month.held_back, BusSink(bus), clock, state.progress)
    add_release_route(app, publisher)
    return app, publisher, bus


async def clock_doc(app: Quart) -> dict[str, Any]:
    answer = await app.test_client().get("/clock")
    assert answer.status_code == 200
    doc: dict[str, Any] = orjson.loads(await answer.get_data())
    return doc


async def test_progress_release_and_its_three_refusals() -> None:
    month = small_month()
    assert month.held_back
    app, publisher, bus = served(month)
    client = app.test_client()
    total = len(month.notifications) + len(month.held_back)

    first_day = month.period_from + timedelta(days=1)
    sent = await publisher.publish_until(first_day)
    doc = await clock_doc(app)
    assert doc["published"] == sent == bus.published > 0
    assert doc["total"] == total and doc["held"] == len(month.held_back) and doc["holding"] is False
    refused = await client.post("/release", json={})
    assert refused.status_code == 409
    assert "still being published" in orjson.loads(await refused.get_data())["error"]

    await publisher.publish_until(month.period_to + timedelta(days=400))
    assert (await clock_doc(app))["holding"] is True
    not_json = await client.post("/release", data=b"{not json", headers={"Content-Type": "application/json"})
    assert not_json.status_code == 415

    released = await client.post("/release", json={})
    assert released.status_code == 200
    before = orjson.loads(await released.get_data())
    assert before["holding"] is True and before["published"] == len(month.notifications)
    after = await clock_doc(app)
    assert after["published"] == total == bus.published and after["holding"] is False

    again = await client.post("/release")
    assert again.status_code == 409
    assert "already" in orjson.loads(await again.get_data())["error"]


async def test_release_with_nothing_held_is_409() -> None:
    app, publisher, _ = served(small_month(faults=""))
    await publisher.publish_until(publisher._items[-1].published_at)
    answer = await app.test_client().post("/release", json={})
    assert answer.status_code == 409
    assert "nothing is held back" in orjson.loads(await answer.get_data())["error"]


def test_a_broker_off_loopback_is_refused_unless_allowed() -> None:
    with pytest.raises(PublishError, match="not on loopback"):
        check_broker("amqp://user:secret@rabbit.example.org:5672/", allow_remote=False)
    check_broker("amqp://user:secret@rabbit.example.org:5672/", allow_remote=True)
    check_broker("amqp://guest:guest@127.0.0.1:5672/", allow_remote=False)
    check_broker("amqp://guest:guest@localhost/", allow_remote=False)
    with pytest.raises(PublishError) as refused:
        check_broker("amqp://user:secret@10.1.2.3/", allow_remote=False)
    assert "secret" not in str(refused.value)


async def test_paced_publishing_follows_the_clock() -> None:
    month = small_month(faults="")
    # 2 days at 1e6 virtual seconds per wall second: about 0.2 s of wall time.
    clock = VirtualClock(month.period_from, 1_000_000.0)
    bus = InProcessBus(max_buffer=100_000)
    publisher = Publisher(month.notifications, (), BusSink(bus), clock)
    with anyio.fail_after(30):
        await publisher.publish_paced()
    assert bus.published == len(month.notifications)
    assert clock.now() >= month.notifications[-1].published_at


async def test_amqp_sink_publishes_oslo_envelopes_with_confirms(amqp_url: str) -> None:
    month = small_month(faults="")
    queue_name = f"tally-test-publisher-{uuid.uuid4().hex[:8]}"
    connection = await aio_pika.connect(amqp_url)
    try:
        channel = await connection.channel()
        async with AmqpSink(amqp_url) as sink:
            queue = await channel.declare_queue(queue_name, auto_delete=True)
            await queue.bind("nova", routing_key="notifications.info")
            nova = [n for n in month.notifications if n.exchange == "nova" and not n.shape][:20]
            publisher = Publisher(nova, (), sink, VirtualClock(month.period_from))
            await publisher.publish_until(month.period_to)
        bodies = []
        with anyio.fail_after(10):
            while len(bodies) < len(nova):
                message = await queue.get(no_ack=True, fail=False)
                if message is None:
                    await anyio.sleep(0.05)
                    continue
                bodies.append(orjson.loads(message.body))
        inner = orjson.loads(bodies[0]["oslo.message"])
        assert bodies[0]["oslo.version"] == "2.0"
        assert [orjson.loads(b["oslo.message"])["message_id"] for b in bodies] == [n.message_id for n in nova]
        assert inner["event_type"] == nova[0].event_type
    finally:
        # auto_delete needs a consumer to leave; a queue read with basic.get must be deleted.
        await (await connection.channel()).queue_delete(queue_name)
        await connection.close()


async def test_lockstep_is_reproducible_and_skipping_idle_syncs_changes_nothing() -> None:
    month = generate_month(
        1, "2026-07", scale=0.3, days=1, faults="missing-create,lost-update,missing-delete"
    )
    runs = []
    for skip_idle in (True, True, False):
        options = SimulateOptions(seed=1, period="2026-07", faults=month.faults, skip_idle=skip_idle)
        runs.append(await simulate(options, month=month))
    skipping, again, every = runs
    assert skipping.passed and every.passed
    assert skipping.progress.idle_skipped > 0 and every.progress.idle_skipped == 0
    assert skipping.progress.syncs < every.progress.syncs
    assert skipping.stored == again.stored == every.stored
    assert skipping.progress.corrections == every.progress.corrections
