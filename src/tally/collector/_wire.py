"""The consuming side of AMQP 0-9-1, lean: one connection, one channel, deliveries read in place.

This is the collector's only AMQP stack: consuming, declaring the services' exchanges, binding,
probing exchanges and reading the queue's depth all go over it. Why not aio-pika: its per-message
machinery (frame objects, a queue hop per frame and a task per delivery) cost more CPU per message
than the collector's decode, map and outbox together, where the same deliveries read straight from
the socket's chunks cost a small part of that (the figures are in docs/benchmarks.md, section
"collector").

Only what a consumer needs is spoken: the handshake (PLAIN or EXTERNAL), heartbeats, one channel,
qos, exchange and queue declare (passive too) and bind, consume, and multiple acks. Every request
waits at most ``RPC_TIMEOUT_S`` for its answer, a connection attempt at most the URL's connect
timeout per member, so a frozen broker costs a reconnect, never a hang. The broker closing the
channel or the connection, cancelling the consumer, a lost socket or missing heartbeats end the
connection with ``AmqpClosed`` saying which (with the broker's reply code when it gave one).
Frames are read by ``_frames.FrameReader``. anyio streams, so it runs on either backend; over TLS
the records one read of the socket brought in are read together (``with_buffered_records``).
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import ByteStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from anyio.streams.tls import TLSAttribute
from pamqp import commands
from pamqp import frame as pamqp_frame
from pamqp.base import Frame
from pamqp.common import FieldTable

from ._frames import (
    DEFAULT_FRAME_MAX,
    HEARTBEAT_FRAME,
    AmqpClosed,
    AmqpUnreachable,
    Delivered,
    FrameReader,
    MethodFrame,
    closed_by_broker,
)
from ._url import AmqpAddress, BrokerHost

PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
CHANNEL = 1
RPC_TIMEOUT_S = 30.0
CLOSE_TIMEOUT_S = 2.0
RECEIVE_BYTES = 65536
# Reply codes after which trying again does not help until someone changes the broker or the
# settings: access refused (login, permissions), not allowed (the vhost), precondition failed
# (an exchange declared with other flags).
REFUSALS = frozenset({403, 406, 530})


class ConsumerConnection:
    """One open connection with its channel; see ``run_consumer``."""

    def __init__(
        self,
        stream: ByteStream,
        on_delivery: Callable[[Delivered], Awaitable[None]],
        *,
        max_body: int,
        where: str = "",
    ) -> None:
        self.where = where
        self._stream = stream
        # Over TLS, the records a read of the socket brought in beyond the first are drained here.
        self._tls: ssl.SSLObject | None = stream.extra(TLSAttribute.ssl_object, None)
        self._on_delivery = on_delivery
        self._reader = FrameReader(max_body=max_body)
        self._send_lock = anyio.Lock()
        self._rpc_lock = anyio.Lock()
        replies: tuple[MemoryObjectSendStream[MethodFrame], MemoryObjectReceiveStream[MethodFrame]]
        replies = anyio.create_memory_object_stream[MethodFrame](16)
        self._replies_in, self._replies = replies
        self._ended = anyio.Event()
        self._error: AmqpClosed | None = None
        self._last_received = anyio.current_time()
        self._probing = False
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
            with anyio.move_on_after(RPC_TIMEOUT_S):
                return await self._expect(reply)
            error = AmqpClosed(f"the broker did not answer {method.name} within {RPC_TIMEOUT_S:.0f} s")
            self.end(error)
            raise error

    async def read_loop(self) -> None:
        """Read until the connection ends; never raises (the end is kept for ``wait_closed``)."""
        try:
            while True:
                data = await self._stream.receive(RECEIVE_BYTES)
                if self._tls is not None:
                    data = with_buffered_records(self._tls, data)
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
            raise closed_by_broker("connection", method)
        if isinstance(method, commands.Channel.Close):
            await self._send_method(commands.Channel.CloseOk(), frame.channel)
            if not (self._probing and method.reply_code == 404):
                raise closed_by_broker("channel", method)
        elif isinstance(method, commands.Basic.Cancel):
            raise AmqpClosed(f"the broker cancelled the consumer {method.consumer_tag!r}")
        elif isinstance(method, commands.Connection.Blocked | commands.Connection.Unblocked):
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

    async def handshake(self, address: AmqpAddress, host: BrokerHost, connection_name: str) -> None:
        await self._send(PROTOCOL_HEADER)
        start: commands.Connection.Start = await self._expect(commands.Connection.Start)
        mechanisms = start.mechanisms.split() if isinstance(start.mechanisms, str) else []
        if address.login_method not in mechanisms:
            raise AmqpClosed(
                f"the broker offers no {address.login_method} login (it offers {start.mechanisms!r})", 403
            )
        properties: FieldTable = {
            "product": "tally-collector",
            "connection_name": connection_name,
            "capabilities": {
                "authentication_failure_close": True,
                "consumer_cancel_notify": True,
                "connection.blocked": True,
            },
        }
        # EXTERNAL: the broker takes the user from the client certificate; the response is empty.
        response = "" if address.login_method == "EXTERNAL" else f"\0{host.username}\0{host.password}"
        await self._send_method(
            commands.Connection.StartOk(
                client_properties=properties,
                mechanism=address.login_method,
                response=response,
                locale="en_US",
            ),
            0,
        )
        tune: commands.Connection.Tune = await self._expect(commands.Connection.Tune)
        self.frame_max = tune.frame_max or DEFAULT_FRAME_MAX
        self._reader.frame_max = self.frame_max
        proposed = tune.heartbeat
        self.heartbeat_s = address.heartbeat_s if address.heartbeat_s is not None else proposed
        await self._send_method(
            commands.Connection.TuneOk(channel_max=1, frame_max=self.frame_max, heartbeat=self.heartbeat_s),
            0,
        )
        await self._rpc(commands.Connection.Open(virtual_host=address.vhost), commands.Connection.OpenOk, 0)
        await self._rpc(commands.Channel.Open(), commands.Channel.OpenOk)

    async def qos(self, prefetch: int) -> None:
        await self._rpc(commands.Basic.Qos(prefetch_count=prefetch), commands.Basic.QosOk)

    async def declare_exchange(self, name: str, *, durable: bool) -> None:
        """Declare a topic exchange as oslo's own listener does (not auto-deleted)."""
        await self._rpc(
            commands.Exchange.Declare(exchange=name, exchange_type="topic", durable=durable),
            commands.Exchange.DeclareOk,
        )

    async def exchange_exists(self, name: str) -> bool:
        """A passive declare: True when the exchange is there. A missing one closes the channel,
        which is opened again (the probe's only side effect)."""
        self._probing = True
        try:
            async with self._rpc_lock:
                await self._send_method(commands.Exchange.Declare(exchange=name, passive=True), CHANNEL)
                with anyio.fail_after(RPC_TIMEOUT_S):
                    got = await self._expect(Frame)
            if isinstance(got, commands.Exchange.DeclareOk):
                return True
            if isinstance(got, commands.Channel.Close):
                await self._rpc(commands.Channel.Open(), commands.Channel.OpenOk)
                return False
            raise AmqpClosed(f"protocol error: {got.name} answered exchange.declare")
        except TimeoutError:
            error = AmqpClosed(f"the broker did not answer Exchange.Declare within {RPC_TIMEOUT_S:.0f} s")
            self.end(error)
            raise error from None
        finally:
            self._probing = False

    async def declare_queue(
        self, name: str, arguments: dict[str, Any] | None, *, passive: bool = False
    ) -> tuple[int, int]:
        """Declare the durable queue (or check it, ``passive``); (messages ready, consumers)."""
        ok: commands.Queue.DeclareOk = await self._rpc(
            commands.Queue.Declare(queue=name, durable=True, passive=passive, arguments=arguments),
            commands.Queue.DeclareOk,
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


def with_buffered_records(tls: ssl.SSLObject, first: bytes) -> bytes:
    """``first`` (what the TLS stream's receive returned) and the plaintext of every further record
    the same read of the socket already brought in.

    anyio's TLS stream returns one record per ``receive``, and RabbitMQ writes about one record per
    delivery: read alone, a TLS connection would take one trip through the read loop and the frame
    reader per delivery, where a plain one takes one per 64 KiB. The records are already decrypted
    into memory by then; this only stops at the first that is not complete (``SSLWantReadError``),
    or at the peer's close_notify (``b""``), which the stream's next ``receive`` reports as its end.
    """
    parts = [first]
    while True:
        try:
            more = tls.read(RECEIVE_BYTES)
        except ssl.SSLWantReadError:
            break
        if not more:
            break
        parts.append(more)
    return first if len(parts) == 1 else b"".join(parts)


async def _connect(address: AmqpAddress, host: BrokerHost) -> ByteStream:
    """A TCP (and TLS) stream to one member within the connect timeout; ``AmqpClosed`` says why not."""
    try:
        with anyio.fail_after(address.connect_timeout_s):
            context = address.ssl_context()
            if context is None:
                return await anyio.connect_tcp(host.host, host.port)
            return await anyio.connect_tcp(
                host.host, host.port, ssl_context=context, tls_standard_compatible=False
            )
    except TimeoutError:
        raise AmqpClosed(f"no connection to {host.where} within {address.connect_timeout_s:g} s") from None
    except ssl.SSLError as exc:
        # A certificate the CA does not vouch for will not change by retrying.
        raise AmqpClosed(f"TLS with {host.where} failed: {exc.reason or exc}", 403) from None
    except OSError as exc:
        raise AmqpClosed(f"cannot connect to {host.where}: {exc.strerror or exc}") from None


async def run_consumer(
    address: AmqpAddress,
    *,
    connection_name: str,
    on_delivery: Callable[[Delivered], Awaitable[None]],
    on_ready: Callable[[ConsumerConnection], Awaitable[None]],
    max_body: int,
    first_host: int = 0,
) -> tuple[AmqpClosed, int]:
    """Connect to the first member that answers (from ``first_host`` on, in turn), log in, open
    the channel, let ``on_ready`` set it up (qos, exchanges, queue, bindings, consume), then read
    deliveries into ``on_delivery``, in the broker's order, until the connection ends.

    Returns why it ended and the member it was on, rather than raising (an unreachable cluster, a
    refused login, a close by the broker, a lost socket), so that the caller's task group sees no
    error; ``on_ready`` may raise ``AmqpClosed`` for the same effect. When no member answers, the
    reasons of all are joined. Cancellation closes the connection politely.
    """
    failures: list[str] = []
    count = len(address.hosts)
    for step in range(count):
        index = (first_host + step) % count
        host = address.hosts[index]
        try:
            stream = await _connect(address, host)
        except AmqpClosed as exc:
            if exc.reply_code is not None:
                return exc, index
            failures.append(str(exc))
            continue
        return await _consume_on(
            stream, address, host, connection_name, on_delivery, on_ready, max_body
        ), index
    return AmqpUnreachable("; ".join(failures)), first_host


async def _consume_on(
    stream: ByteStream,
    address: AmqpAddress,
    host: BrokerHost,
    connection_name: str,
    on_delivery: Callable[[Delivered], Awaitable[None]],
    on_ready: Callable[[ConsumerConnection], Awaitable[None]],
    max_body: int,
) -> AmqpClosed:
    connection = ConsumerConnection(stream, on_delivery, max_body=max_body, where=host.where)
    async with stream, anyio.create_task_group() as tg:
        tg.start_soon(connection.read_loop)
        try:
            try:
                with anyio.fail_after(address.connect_timeout_s + RPC_TIMEOUT_S / 2):
                    await connection.handshake(address, host, connection_name)
            except TimeoutError:
                raise AmqpClosed(f"no handshake with the broker at {host.where} in time") from None
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
