"""The consuming side of AMQP 0-9-1, lean: one connection, one channel, deliveries read in place.

Why not aio-pika here: its per-message machinery (frame objects, a queue hop
per frame and a task per delivery) cost about 110 µs of CPU per message on this
project's two-core machine, more than the collector's decode, map and outbox
together. The same deliveries read straight from the socket's chunks cost under
10 (``bench/collector.py`` measures both). aio-pika still does the rare work:
probing exchanges and reading queue statistics, on short-lived connections.

Only what a consumer needs is spoken: the handshake (PLAIN), heartbeats, one
channel, qos, queue declare and bind, consume, and multiple acks. The broker
closing the channel or the connection, cancelling the consumer, a lost socket
or missing heartbeats end the connection with ``AmqpClosed`` saying which.
Method frames are built and read by pamqp; the three frames of a delivery
(method, content header, body) are read here with ``struct``, by
``FrameReader``, which is pure and tested on its own. anyio streams, so it runs
on either backend.
"""

from __future__ import annotations

import ssl
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import anyio
from anyio.abc import ByteStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from pamqp import commands
from pamqp import frame as pamqp_frame
from pamqp.base import Frame
from pamqp.common import FieldTable
from pamqp.exceptions import PAMQPException

PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
FRAME_METHOD, FRAME_HEADER, FRAME_BODY, FRAME_HEARTBEAT = 1, 2, 3, 8
FRAME_END = 0xCE
HEARTBEAT_FRAME = b"\x08\x00\x00\x00\x00\x00\x00\xce"
CHANNEL = 1
DEFAULT_FRAME_MAX = 131072
HANDSHAKE_TIMEOUT_S = 15.0
CLOSE_TIMEOUT_S = 2.0
RECEIVE_BYTES = 65536

_FRAME_HEAD = struct.Struct(">BHI")
_METHOD_ID = struct.Struct(">HH")
_LONG_LONG = struct.Struct(">Q")
_DELIVER = (60, 60)


class AmqpClosed(Exception):
    """The connection ended; the message says why (the broker's reply code and text when it said)."""


class AmqpUrlInvalid(ValueError):
    """An AMQP URL this consumer cannot use."""


@dataclass(frozen=True, slots=True)
class AmqpAddress:
    """Where and how to connect, read from an ``amqp://`` or ``amqps://`` URL.

    The vhost is the URL's path without its leading slash (``/`` when there is
    none); ``?heartbeat=N`` overrides the broker's proposed heartbeat, and
    ``cafile``, ``certfile`` and ``keyfile`` configure TLS for ``amqps``.
    """

    host: str
    port: int
    username: str
    password: str
    vhost: str
    tls: bool
    heartbeat_s: int | None = None
    cafile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None

    @classmethod
    def parse(cls, url: str) -> AmqpAddress:
        parts = urlsplit(url)
        if parts.scheme not in ("amqp", "amqps"):
            raise AmqpUrlInvalid(f"the AMQP URL must start with amqp:// or amqps://, not {parts.scheme!r}")
        try:
            port = parts.port
        except ValueError as exc:
            raise AmqpUrlInvalid(f"the AMQP URL has a bad port: {exc}") from None
        query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
        heartbeat: int | None = None
        if "heartbeat" in query:
            try:
                heartbeat = int(query["heartbeat"])
            except ValueError:
                raise AmqpUrlInvalid(
                    f"the AMQP URL's heartbeat {query['heartbeat']!r} is not a number"
                ) from None
            if heartbeat < 0:
                raise AmqpUrlInvalid("the AMQP URL's heartbeat must not be negative")
        tls = parts.scheme == "amqps"
        path = parts.path
        return cls(
            host=parts.hostname or "localhost",
            port=port or (5671 if tls else 5672),
            username=unquote(parts.username) if parts.username is not None else "guest",
            password=unquote(parts.password) if parts.password is not None else "guest",
            vhost=unquote(path[1:]) if len(path) > 1 else "/",
            tls=tls,
            heartbeat_s=heartbeat,
            cafile=query.get("cafile"),
            certfile=query.get("certfile"),
            keyfile=query.get("keyfile"),
        )

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.tls:
            return None
        context = ssl.create_default_context(cafile=self.cafile)
        if self.certfile:
            context.load_cert_chain(self.certfile, self.keyfile)
        return context


@dataclass(frozen=True, slots=True)
class Delivered:
    """One message as the broker delivered it on the channel."""

    delivery_tag: int
    exchange: str
    routing_key: str
    body: bytes


@dataclass(frozen=True, slots=True)
class MethodFrame:
    """A method frame other than a delivery's, as pamqp reads it."""

    channel: int
    method: Frame


class FrameReader:
    """Turns the bytes of a connection, in chunks of any size, into ``Delivered`` and ``MethodFrame``
    values in the order the broker sent them; heartbeats are consumed. Pure: no I/O."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._deliver: tuple[int, str, str] | None = None
        self._parts: list[bytes] = []
        self._remaining = 0

    def feed(self, data: bytes) -> list[Delivered | MethodFrame]:
        """Everything the bytes so far complete; raises ``AmqpClosed`` on a malformed frame."""
        buffer = self._buffer
        buffer += data
        out: list[Delivered | MethodFrame] = []
        size_now = len(buffer)
        pos = 0
        view = memoryview(buffer)
        try:
            while size_now - pos >= 8:
                kind, channel, size = _FRAME_HEAD.unpack_from(buffer, pos)
                end = pos + 7 + size
                if end >= size_now:
                    break
                if buffer[end] != FRAME_END:
                    raise AmqpClosed(f"protocol error: frame of type {kind} does not end with 0xCE")
                if kind == FRAME_METHOD:
                    if _METHOD_ID.unpack_from(buffer, pos + 7) == _DELIVER:
                        self._deliver = _read_deliver(buffer, pos + 11)
                    else:
                        out.append(MethodFrame(channel, _unmarshal(bytes(view[pos : end + 1]))))
                elif kind == FRAME_HEADER:
                    self._remaining = _LONG_LONG.unpack_from(buffer, pos + 11)[0]
                    self._parts = []
                    if self._remaining == 0:
                        out.append(self._delivered(b""))
                elif kind == FRAME_BODY:
                    self._parts.append(bytes(view[pos + 7 : end]))
                    self._remaining -= size
                    if self._remaining <= 0:
                        parts = self._parts
                        out.append(self._delivered(parts[0] if len(parts) == 1 else b"".join(parts)))
                elif kind != FRAME_HEARTBEAT:
                    raise AmqpClosed(f"protocol error: unknown frame type {kind}")
                pos = end + 1
        finally:
            view.release()
        del buffer[:pos]
        return out

    def _delivered(self, body: bytes) -> Delivered:
        if self._deliver is None:
            raise AmqpClosed("protocol error: content without a basic.deliver")
        tag, exchange, routing_key = self._deliver
        self._deliver = None
        self._parts = []
        return Delivered(tag, exchange, routing_key, body)


def _short_string(buffer: bytearray, at: int) -> tuple[str, int]:
    length = buffer[at]
    return buffer[at + 1 : at + 1 + length].decode("utf-8", "replace"), at + 1 + length


def _read_deliver(buffer: bytearray, at: int) -> tuple[int, str, str]:
    """basic.deliver's arguments: consumer-tag, delivery-tag, redelivered, exchange, routing-key."""
    at += 1 + buffer[at]
    (tag,) = _LONG_LONG.unpack_from(buffer, at)
    exchange, at = _short_string(buffer, at + 9)
    routing_key, _ = _short_string(buffer, at)
    return tag, exchange, routing_key


def _unmarshal(data: bytes) -> Frame:
    try:
        _consumed, _channel, method = pamqp_frame.unmarshal(data)
    except (PAMQPException, ValueError, struct.error) as exc:
        raise AmqpClosed(f"protocol error: unreadable method frame ({exc})") from None
    if not isinstance(method, Frame):
        raise AmqpClosed(f"protocol error: {type(method).__name__} in a method frame")
    return method


def _closed_by_broker(what: str, method: commands.Connection.Close | commands.Channel.Close) -> AmqpClosed:
    return AmqpClosed(f"the broker closed the {what}: {method.reply_code} {method.reply_text}")


class ConsumerConnection:
    """One open connection with its channel; see ``run_consumer``."""

    def __init__(self, stream: ByteStream, on_delivery: Callable[[Delivered], Awaitable[None]]) -> None:
        self._stream = stream
        self._on_delivery = on_delivery
        self._reader = FrameReader()
        self._send_lock = anyio.Lock()
        self._rpc_lock = anyio.Lock()
        replies: tuple[MemoryObjectSendStream[MethodFrame], MemoryObjectReceiveStream[MethodFrame]]
        replies = anyio.create_memory_object_stream[MethodFrame](16)
        self._replies_in, self._replies = replies
        self._ended = anyio.Event()
        self._error: AmqpClosed | None = None
        self._last_received = anyio.current_time()
        self.heartbeat_s = 0
        self.frame_max = DEFAULT_FRAME_MAX

    @property
    def closed(self) -> bool:
        return self._ended.is_set()

    @property
    def error(self) -> AmqpClosed:
        """Why the connection ended (only once ``closed``)."""
        assert self._error is not None
        return self._error

    def end(self, error: AmqpClosed) -> None:
        """Mark the connection ended with ``error`` (the first reason given is kept)."""
        if self._error is None:
            self._error = error
        self._replies_in.close()
        self._ended.set()

    async def wait_closed(self) -> None:
        """Wait until the connection ends; raises the ``AmqpClosed`` that ended it."""
        await self._ended.wait()
        assert self._error is not None
        raise self._error

    async def _send(self, data: bytes) -> None:
        try:
            async with self._send_lock:
                await self._stream.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            error = AmqpClosed(f"the connection was lost: {exc!r}")
            self.end(error)
            raise error from None

    async def _send_method(self, method: Frame, channel: int) -> None:
        await self._send(pamqp_frame.marshal(method, channel))

    async def _expect(self, reply: type[Frame]) -> Any:
        try:
            got = await self._replies.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            assert self._error is not None
            raise self._error from None
        if not isinstance(got.method, reply):
            error = AmqpClosed(f"protocol error: expected {reply.name}, the broker sent {got.method.name}")
            self.end(error)
            raise error
        return got.method

    async def _rpc(self, method: Frame, reply: type[Frame], channel: int = CHANNEL) -> Any:
        async with self._rpc_lock:
            await self._send_method(method, channel)
            return await self._expect(reply)

    async def read_loop(self) -> None:
        """Read until the connection ends; never raises (the end is kept for ``wait_closed``)."""
        try:
            while True:
                data = await self._stream.receive(RECEIVE_BYTES)
                self._last_received = anyio.current_time()
                for item in self._reader.feed(data):
                    if isinstance(item, Delivered):
                        await self._on_delivery(item)
                    else:
                        await self._on_method(item)
        except AmqpClosed as exc:
            self.end(exc)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            self.end(AmqpClosed(f"the connection was lost: {exc!r}" if str(exc) else "the broker hung up"))
        finally:
            # Cancelled with its caller: nothing reads any more, so whoever waits for the end (a
            # polite close waiting for the broker's close-ok) must not wait on.
            self.end(AmqpClosed("the collector stopped reading"))

    async def _on_method(self, frame: MethodFrame) -> None:
        method = frame.method
        if isinstance(method, commands.Connection.Close):
            await self._send_method(commands.Connection.CloseOk(), 0)
            raise _closed_by_broker("connection", method)
        if isinstance(method, commands.Channel.Close):
            await self._send_method(commands.Channel.CloseOk(), frame.channel)
            raise _closed_by_broker("channel", method)
        if isinstance(method, commands.Basic.Cancel):
            raise AmqpClosed(f"the broker cancelled the consumer {method.consumer_tag!r}")
        if isinstance(method, commands.Connection.Blocked | commands.Connection.Unblocked):
            return  # publishers' flow control; a consumer goes on
        try:
            self._replies_in.send_nowait(frame)
        except anyio.WouldBlock:
            raise AmqpClosed(f"protocol error: unexpected {method.name} from the broker") from None

    async def heartbeat_loop(self) -> None:
        """Send a heartbeat every half interval; end the connection after two silent intervals."""
        if not self.heartbeat_s:
            return
        every = self.heartbeat_s / 2
        while not self.closed:
            await anyio.sleep(every)
            silent = anyio.current_time() - self._last_received
            if silent > 2 * self.heartbeat_s:
                self.end(AmqpClosed(f"no heartbeat from the broker for {silent:.0f} s"))
                return
            try:
                await self._send(HEARTBEAT_FRAME)
            except AmqpClosed:
                return

    async def handshake(self, address: AmqpAddress, connection_name: str) -> None:
        await self._send(PROTOCOL_HEADER)
        start: commands.Connection.Start = await self._expect(commands.Connection.Start)
        mechanisms = start.mechanisms.split() if isinstance(start.mechanisms, str) else []
        if "PLAIN" not in mechanisms:
            raise AmqpClosed(f"the broker offers no PLAIN login (it offers {start.mechanisms!r})")
        properties: FieldTable = {
            "product": "tally-collector",
            "connection_name": connection_name,
            "capabilities": {
                "authentication_failure_close": True,
                "consumer_cancel_notify": True,
                "connection.blocked": True,
            },
        }
        await self._send_method(
            commands.Connection.StartOk(
                client_properties=properties,
                mechanism="PLAIN",
                response=f"\0{address.username}\0{address.password}",
                locale="en_US",
            ),
            0,
        )
        tune: commands.Connection.Tune = await self._expect(commands.Connection.Tune)
        self.frame_max = tune.frame_max or DEFAULT_FRAME_MAX
        proposed = tune.heartbeat
        self.heartbeat_s = address.heartbeat_s if address.heartbeat_s is not None else proposed
        await self._send_method(
            commands.Connection.TuneOk(
                channel_max=1,
                frame_max=self.frame_max,
                heartbeat=self.heartbeat_s,
            ),
            0,
        )
        await self._rpc(commands.Connection.Open(virtual_host=address.vhost), commands.Connection.OpenOk, 0)
        await self._rpc(commands.Channel.Open(), commands.Channel.OpenOk)

    async def qos(self, prefetch: int) -> None:
        await self._rpc(commands.Basic.Qos(prefetch_count=prefetch), commands.Basic.QosOk)

    async def declare_queue(self, name: str, arguments: dict[str, Any] | None) -> tuple[int, int]:
        """Declare the durable queue; (messages ready, consumers) as the broker answered."""
        ok: commands.Queue.DeclareOk = await self._rpc(
            commands.Queue.Declare(queue=name, durable=True, arguments=arguments), commands.Queue.DeclareOk
        )
        return int(ok.message_count or 0), int(ok.consumer_count or 0)

    async def bind(self, queue: str, exchange: str, routing_key: str) -> None:
        await self._rpc(
            commands.Queue.Bind(queue=queue, exchange=exchange, routing_key=routing_key),
            commands.Queue.BindOk,
        )

    async def consume(self, queue: str, consumer_tag: str) -> None:
        await self._rpc(
            commands.Basic.Consume(queue=queue, consumer_tag=consumer_tag, no_ack=False),
            commands.Basic.ConsumeOk,
        )

    async def ack(self, delivery_tag: int) -> None:
        """Acknowledge every delivery up to and including ``delivery_tag``."""
        await self._send_method(commands.Basic.Ack(delivery_tag=delivery_tag, multiple=True), CHANNEL)

    async def close(self) -> None:
        """Say goodbye (connection.close, then wait briefly for close-ok); never raises."""
        if self.closed:
            return
        with anyio.move_on_after(CLOSE_TIMEOUT_S):
            try:
                goodbye = commands.Connection.Close(reply_code=200, reply_text="bye", class_id=0, method_id=0)
                await self._send_method(goodbye, 0)
                await self._ended.wait()
            except AmqpClosed:
                pass
        self.end(AmqpClosed("closed by the collector"))


async def _connect(address: AmqpAddress) -> ByteStream:
    context = address.ssl_context()
    if context is None:
        return await anyio.connect_tcp(address.host, address.port)
    return await anyio.connect_tcp(
        address.host, address.port, ssl_context=context, tls_standard_compatible=False
    )


async def run_consumer(
    address: AmqpAddress,
    *,
    connection_name: str,
    on_delivery: Callable[[Delivered], Awaitable[None]],
    on_ready: Callable[[ConsumerConnection], Awaitable[None]],
) -> AmqpClosed:
    """Connect, log in, open the channel, let ``on_ready`` set it up (qos, queue, bindings, consume),
    then read deliveries into ``on_delivery``, in the broker's order, until the connection ends.

    Returns why it ended rather than raising it (an unreachable broker, a refused login, a close by
    the broker, a lost socket), so that the caller's task group sees no error; ``on_ready`` may
    raise ``AmqpClosed`` for the same effect. Cancellation closes the connection politely.
    """
    try:
        stream = await _connect(address)
    except OSError as exc:
        return AmqpClosed(f"cannot connect to {address.host}:{address.port}: {exc}")
    connection = ConsumerConnection(stream, on_delivery)
    async with stream, anyio.create_task_group() as tg:
        tg.start_soon(connection.read_loop)
        try:
            try:
                with anyio.fail_after(HANDSHAKE_TIMEOUT_S):
                    await connection.handshake(address, connection_name)
            except TimeoutError:
                raise AmqpClosed(f"no handshake with the broker within {HANDSHAKE_TIMEOUT_S:.0f} s") from None
            tg.start_soon(connection.heartbeat_loop)
            await on_ready(connection)
            await connection.wait_closed()
        except AmqpClosed as exc:
            connection.end(exc)
        finally:
            with anyio.CancelScope(shield=True):
                await connection.close()
            tg.cancel_scope.cancel()
    return connection.error
