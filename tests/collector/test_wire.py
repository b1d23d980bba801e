"""The lean AMQP consumer: frames read from chunks of any size, the body cap, and the real RabbitMQ on both
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

from tally.collector._frames import HEARTBEAT_FRAME, AmqpClosed, Delivered, FrameReader, MethodFrame
from tally.collector._url import AmqpAddress
from tally.collector._wire import ConsumerConnection, run_consumer

FRAME_MAX = 64
MAX_BODY = 1 << 20


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
    reader = FrameReader(max_body=MAX_BODY)
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
        FrameReader(max_body=MAX_BODY).feed(bytes(frame))


def test_content_without_a_delivery_is_a_protocol_error() -> None:
    with pytest.raises(AmqpClosed, match=r"without a basic\.deliver"):
        FrameReader(max_body=MAX_BODY).feed(pamqp_frame.marshal(ContentHeader(0, 0), 1))


def test_a_body_over_the_cap_is_refused_from_its_header_and_never_kept() -> None:
    reader = FrameReader(max_body=100)
    head = _message(7, b"y" * 640)
    # Fed frame by frame: no body frame is kept once the header announced too much.
    got: list[Delivered | MethodFrame] = []
    for at in range(0, len(head), 71):
        got += reader.feed(head[at : at + 71])
        assert not reader._parts
    got += reader.feed(_message(8, b"small"))
    assert got == [
        Delivered(7, "nova", "notifications.info", b"", refused_size=640),
        Delivered(8, "nova", "notifications.info", b"small"),
    ]


def test_a_frame_over_frame_max_is_a_protocol_error_before_it_is_read() -> None:
    reader = FrameReader(max_body=MAX_BODY, frame_max=4096)
    with pytest.raises(AmqpClosed, match="over the frame_max 4096"):
        reader.feed(b"\x03\x00\x01\x7f\xff\xff\xff")  # a body frame announcing 2 GiB


# -- on the machine's RabbitMQ, on both backends ------------------------------------------------------------
# The wire is anyio only, so it is tested on trio too; the rest of the collector is asyncio-only (aio-pika).
both_backends = pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])


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
@both_backends
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
                        max_body=MAX_BODY,
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

        outcome, _ = await run_consumer(
            AmqpAddress.parse(amqp_url),
            connection_name="count",
            on_delivery=take,
            on_ready=count,
            max_body=MAX_BODY,
        )
        assert str(outcome) == "counted" and ended == [(0, 0)]
    finally:
        await anyio.to_thread.run_sync(_delete, amqp_url, unique)


@pytest.mark.rabbitmq
@pytest.mark.anyio
@both_backends
async def test_a_refused_login_and_a_closed_channel_end_with_the_brokers_reason(
    amqp_url: str, unique: str
) -> None:
    async def nothing(message: Delivered) -> None:
        raise AssertionError("no delivery expected")

    async def never(connection: ConsumerConnection) -> None:
        raise AssertionError("the login should have been refused")

    address = AmqpAddress.parse(amqp_url)
    member = address.hosts[0]
    wrong = AmqpAddress.parse(
        amqp_url.replace(f"{member.username}:{quote(member.password)}@", "nobody:wrong@")
    )
    refused, _ = await run_consumer(
        wrong, connection_name="refused", on_delivery=nothing, on_ready=never, max_body=MAX_BODY
    )
    assert "ACCESS_REFUSED" in str(refused) and refused.reply_code == 403

    async def bind_to_a_missing_exchange(connection: ConsumerConnection) -> None:
        await connection.declare_queue(unique, None)
        await connection.bind(unique, f"{unique}-absent", "k")

    try:
        closed, _ = await run_consumer(
            address,
            connection_name="closed",
            on_delivery=nothing,
            on_ready=bind_to_a_missing_exchange,
            max_body=MAX_BODY,
        )
        assert str(closed).startswith("the broker closed the channel: 404")
    finally:
        await anyio.to_thread.run_sync(_delete, amqp_url, unique)


@pytest.mark.anyio
@both_backends
async def test_an_unreachable_broker_ends_at_once_naming_the_address() -> None:
    async def unused(_: object) -> None:
        raise AssertionError("unreachable")

    ended, _ = await run_consumer(
        AmqpAddress.parse("amqp://127.0.0.1:1/"),
        connection_name="x",
        on_delivery=unused,
        on_ready=unused,
        max_body=MAX_BODY,
    )
    assert str(ended).startswith("cannot connect to 127.0.0.1:1") and ended.reply_code is None


@pytest.mark.rabbitmq
@pytest.mark.anyio
@both_backends
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
        ended, _ = await run_consumer(
            address, connection_name="idle", on_delivery=nothing, on_ready=idle, max_body=MAX_BODY
        )
        assert str(ended) == "idle long enough"
    finally:
        await anyio.to_thread.run_sync(_delete, amqp_url, unique)
