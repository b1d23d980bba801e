"""The lean AMQP consumer: frames read from chunks of any size, URLs, and the real RabbitMQ on both
anyio backends (the wire speaks anyio streams only)."""

from __future__ import annotations

import asyncio
from urllib.parse import quote

import aio_pika
import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pamqp import commands
from pamqp import frame as pamqp_frame
from pamqp.body import ContentBody
from pamqp.header import ContentHeader

from tally.collector._wire import (
    HEARTBEAT_FRAME,
    AmqpAddress,
    AmqpClosed,
    AmqpUrlInvalid,
    ConsumerConnection,
    Delivered,
    FrameReader,
    MethodFrame,
    run_consumer,
)

FRAME_MAX = 64


def _message(tag: int, body: bytes, exchange: str = "nova", key: str = "notifications.info") -> bytes:
    """One delivery as the broker writes it, the body split at FRAME_MAX like a small frame_max does."""
    deliver = commands.Basic.Deliver(
        consumer_tag="c", delivery_tag=tag, redelivered=tag % 2 == 0, exchange=exchange, routing_key=key
    )
    frames = [pamqp_frame.marshal(deliver, 1), pamqp_frame.marshal(ContentHeader(0, len(body)), 1)]
    for start in range(0, len(body), FRAME_MAX):
        frames.append(pamqp_frame.marshal(ContentBody(body[start : start + FRAME_MAX]), 1))
    return b"".join(frames)


BODIES = [b"", b"x", b"{" + b"a" * 150 + b"}", "ünïcode".encode(), bytes(range(256))]


def _stream() -> tuple[bytes, list[object]]:
    wire = b"".join(
        [
            _message(1, BODIES[0]),
            HEARTBEAT_FRAME,
            _message(2, BODIES[1], exchange="", key="q"),
            pamqp_frame.marshal(commands.Queue.BindOk(), 1),
            _message(3, BODIES[2], exchange="ex-3"),
            _message(4, BODIES[3]),
            HEARTBEAT_FRAME,
            _message(5, BODIES[4]),
        ]
    )
    expected: list[object] = [
        Delivered(1, "nova", "notifications.info", BODIES[0]),
        Delivered(2, "", "q", BODIES[1]),
        "BindOk",
        Delivered(3, "ex-3", "notifications.info", BODIES[2]),
        Delivered(4, "nova", "notifications.info", BODIES[3]),
        Delivered(5, "nova", "notifications.info", BODIES[4]),
    ]
    return wire, expected


def _comparable(items: list[Delivered | MethodFrame]) -> list[object]:
    return [item if isinstance(item, Delivered) else type(item.method).__name__ for item in items]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=200), max_size=40))
def test_any_chunking_of_the_bytes_reads_the_same_frames(cuts: list[int]) -> None:
    wire, expected = _stream()
    reader = FrameReader()
    got: list[Delivered | MethodFrame] = []
    at = 0
    for size in cuts:
        got += reader.feed(wire[at : at + size])
        at += size
    got += reader.feed(wire[at:])
    assert _comparable(got) == expected


def test_a_frame_without_its_end_octet_is_a_protocol_error() -> None:
    frame = bytearray(pamqp_frame.marshal(commands.Basic.QosOk(), 1))
    frame[-1] = 0
    with pytest.raises(AmqpClosed, match="does not end with 0xCE"):
        FrameReader().feed(bytes(frame))


def test_content_without_a_delivery_is_a_protocol_error() -> None:
    with pytest.raises(AmqpClosed, match=r"without a basic\.deliver"):
        FrameReader().feed(pamqp_frame.marshal(ContentHeader(0, 0), 1))


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("amqp://guest:guest@127.0.0.1:5672/", ("127.0.0.1", 5672, "guest", "guest", "/", False, None)),
        ("amqp://rabbit", ("rabbit", 5672, "guest", "guest", "/", False, None)),
        ("amqps://u%40x:p%3Aw@mq/%2Fprod?heartbeat=20", ("mq", 5671, "u@x", "p:w", "/prod", True, 20)),
        ("amqp://u:p@mq:5673/openstack", ("mq", 5673, "u", "p", "openstack", False, None)),
    ],
)
def test_urls_give_host_login_vhost_and_heartbeat(url: str, expected: tuple[object, ...]) -> None:
    a = AmqpAddress.parse(url)
    assert (a.host, a.port, a.username, a.password, a.vhost, a.tls, a.heartbeat_s) == expected


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://mq/", "must start with amqp:// or amqps://"),
        ("amqp://mq:99999/", "bad port"),
        ("amqp://mq/?heartbeat=soon", "is not a number"),
    ],
)
def test_unusable_urls_say_what_is_wrong(url: str, message: str) -> None:
    with pytest.raises(AmqpUrlInvalid, match=message):
        AmqpAddress.parse(url)


# -- on the machine's RabbitMQ, on both backends ------------------------------------------------------------
@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _publish(url: str, queue: str, bodies: list[bytes]) -> None:
    """Declare the queue and publish to it through the default exchange (aio-pika, in a thread of its
    own, so that the test itself may run on trio)."""

    async def run() -> None:
        connection = await aio_pika.connect(url)
        async with connection:
            channel = await connection.channel(publisher_confirms=True)
            await channel.declare_queue(queue, durable=True)
            for body in bodies:
                await channel.default_exchange.publish(aio_pika.Message(body), routing_key=queue)

    asyncio.run(run())


def _delete(url: str, queue: str) -> None:
    async def run() -> None:
        connection = await aio_pika.connect(url)
        async with connection:
            await (await connection.channel()).queue_delete(queue)

    asyncio.run(run())


@pytest.mark.rabbitmq
@pytest.mark.anyio
async def test_consumes_in_order_and_acks_so_nothing_is_redelivered(amqp_url: str, unique: str) -> None:
    bodies = [f"message {n}".encode() for n in range(300)]
    await anyio.to_thread.run_sync(_publish, amqp_url, unique, bodies)
    got: list[Delivered] = []
    opened: list[ConsumerConnection] = []

    async def ready(connection: ConsumerConnection) -> None:
        opened.append(connection)
        await connection.qos(50)
        assert await connection.declare_queue(unique, None) == (300, 0)
        await connection.consume(unique, "test")

    acked: list[int] = []

    async def take(message: Delivered) -> None:
        got.append(message)
        if len(got) % 50 == 0:
            await opened[0].ack(message.delivery_tag)
            acked.append(message.delivery_tag)

    try:
        with anyio.move_on_after(10) as scope:
            async with anyio.create_task_group() as tg:

                async def consume() -> None:
                    await run_consumer(
                        AmqpAddress.parse(amqp_url),
                        connection_name=f"test {unique}",
                        on_delivery=take,
                        on_ready=ready,
                    )

                tg.start_soon(consume)
                # Until the last ack is on the wire: cancelling inside it would leave 50 unacked.
                while len(acked) < 6:  # noqa: ASYNC110
                    await anyio.sleep(0.01)
                tg.cancel_scope.cancel()
        assert not scope.cancelled_caught
        assert [m.body for m in got] == bodies
        assert [m.delivery_tag for m in got] == list(range(1, 301))
        assert opened[0].closed
        # Every delivery was acked before the polite close: nothing is left to redeliver.
        await anyio.to_thread.run_sync(_publish, amqp_url, unique, [])
        ended: list[tuple[int, int]] = []

        async def count(connection: ConsumerConnection) -> None:
            ended.append(await connection.declare_queue(unique, None))
            raise AmqpClosed("counted")

        outcome = await run_consumer(
            AmqpAddress.parse(amqp_url), connection_name="count", on_delivery=take, on_ready=count
        )
        assert str(outcome) == "counted" and ended == [(0, 0)]
    finally:
        await anyio.to_thread.run_sync(_delete, amqp_url, unique)


@pytest.mark.rabbitmq
@pytest.mark.anyio
async def test_a_refused_login_and_a_closed_channel_end_with_the_brokers_reason(
    amqp_url: str, unique: str
) -> None:
    async def nothing(message: Delivered) -> None:
        raise AssertionError("no delivery expected")

    async def never(connection: ConsumerConnection) -> None:
        raise AssertionError("the login should have been refused")

    address = AmqpAddress.parse(amqp_url)
    wrong = AmqpAddress.parse(
        amqp_url.replace(f"{address.username}:{quote(address.password)}@", "nobody:wrong@")
    )
    refused = await run_consumer(wrong, connection_name="refused", on_delivery=nothing, on_ready=never)
    assert "ACCESS_REFUSED" in str(refused)

    async def bind_to_a_missing_exchange(connection: ConsumerConnection) -> None:
        await connection.declare_queue(unique, None)
        await connection.bind(unique, f"{unique}-absent", "k")

    try:
        closed = await run_consumer(
            address, connection_name="closed", on_delivery=nothing, on_ready=bind_to_a_missing_exchange
        )
        assert str(closed).startswith("the broker closed the channel: 404")
    finally:
        await anyio.to_thread.run_sync(_delete, amqp_url, unique)


@pytest.mark.anyio
async def test_an_unreachable_broker_ends_at_once_naming_the_address() -> None:
    async def unused(_: object) -> None:
        raise AssertionError("unreachable")

    ended = await run_consumer(
        AmqpAddress.parse("amqp://127.0.0.1:1/"), connection_name="x", on_delivery=unused, on_ready=unused
    )
    assert str(ended).startswith("cannot connect to 127.0.0.1:1")


@pytest.mark.rabbitmq
@pytest.mark.anyio
async def test_heartbeats_keep_an_idle_connection_open(amqp_url: str, unique: str) -> None:
    """With a one-second heartbeat the broker drops a client silent for two seconds; this one lives."""
    separator = "&" if "?" in amqp_url else "?"
    address = AmqpAddress.parse(f"{amqp_url}{separator}heartbeat=1")
    opened: list[ConsumerConnection] = []

    async def idle(connection: ConsumerConnection) -> None:
        opened.append(connection)
        assert connection.heartbeat_s == 1
        await connection.declare_queue(unique, None)
        await connection.consume(unique, "idle")
        await anyio.sleep(4)
        assert not connection.closed
        raise AmqpClosed("idle long enough")

    async def nothing(message: Delivered) -> None:
        raise AssertionError("no delivery expected")

    try:
        ended = await run_consumer(address, connection_name="idle", on_delivery=nothing, on_ready=idle)
        assert str(ended) == "idle long enough"
    finally:
        await anyio.to_thread.run_sync(_delete, amqp_url, unique)
