"""AMQP 0-9-1 frames read from a connection's bytes: deliveries in place, other methods by pamqp.

``FrameReader`` is pure (no I/O) and takes chunks of any size. A delivery's three frames (method,
content header, body frames) are read with ``struct`` straight from the buffer; every other method
frame is handed to pamqp. Two caps keep a hostile or broken peer from making the collector hold
more than it should: a frame larger than the negotiated ``frame_max`` ends the connection, and a
body whose content header announces more than ``max_body`` bytes is refused from the header on:
its body frames are skipped as they arrive, never kept, and it comes out as a ``Delivered`` with an
empty body and ``refused_size`` set, so that the consumer acks and counts it like any bad body.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from pamqp import commands
from pamqp import frame as pamqp_frame
from pamqp.base import Frame
from pamqp.exceptions import PAMQPException

FRAME_METHOD, FRAME_HEADER, FRAME_BODY, FRAME_HEARTBEAT = 1, 2, 3, 8
FRAME_END = 0xCE
HEARTBEAT_FRAME = b"\x08\x00\x00\x00\x00\x00\x00\xce"
DEFAULT_FRAME_MAX = 131072

_FRAME_HEAD = struct.Struct(">BHI")
_METHOD_ID = struct.Struct(">HH")
_LONG_LONG = struct.Struct(">Q")
_DELIVER = (60, 60)


class AmqpClosed(Exception):
    """The connection ended; the message says why (the broker's reply code and text when it said).

    ``reply_code`` is the broker's code when it closed the connection or channel itself.
    """

    def __init__(self, message: str, reply_code: int | None = None) -> None:
        super().__init__(message)
        self.reply_code = reply_code


class AmqpUnreachable(AmqpClosed):
    """No member of the broker accepted a TCP (or TLS) connection: the node is down, or restarting."""


@dataclass(frozen=True, slots=True)
class Delivered:
    """One message as the broker delivered it on the channel; ``refused_size`` is set (and the
    body empty) when the body was over the reader's cap."""

    delivery_tag: int
    exchange: str
    routing_key: str
    body: bytes
    refused_size: int | None = None


@dataclass(frozen=True, slots=True)
class MethodFrame:
    """A method frame other than a delivery's, as pamqp reads it."""

    channel: int
    method: Frame


class FrameReader:
    """Turns the bytes of a connection, in chunks of any size, into ``Delivered`` and ``MethodFrame``
    values in the order the broker sent them; heartbeats are consumed. Pure: no I/O."""

    def __init__(self, *, max_body: int, frame_max: int = DEFAULT_FRAME_MAX) -> None:
        self.max_body = max_body
        self.frame_max = frame_max
        self._buffer = bytearray()
        self._deliver: tuple[int, str, str] | None = None
        self._parts: list[bytes] = []
        self._remaining = 0
        self._refused: int | None = None

    def feed(self, data: bytes) -> list[Delivered | MethodFrame]:
        """Everything the bytes so far complete; raises ``AmqpClosed`` on a malformed frame."""
        buffer = self._buffer
        buffer += data
        out: list[Delivered | MethodFrame] = []
        size_now = len(buffer)
        pos = 0
        view = memoryview(buffer)
        try:
            while size_now - pos >= 7:
                kind, channel, size = _FRAME_HEAD.unpack_from(buffer, pos)
                if size > self.frame_max:
                    raise AmqpClosed(
                        f"protocol error: a frame of {size} bytes is over the frame_max {self.frame_max}"
                    )
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
                    self._refused = self._remaining if self._remaining > self.max_body else None
                    if self._remaining == 0:
                        out.append(self._delivered(b""))
                elif kind == FRAME_BODY:
                    if self._refused is None:
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
        refused = self._refused
        self._deliver = None
        self._parts = []
        self._refused = None
        return Delivered(tag, exchange, routing_key, body, refused)


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


def closed_by_broker(what: str, method: commands.Connection.Close | commands.Channel.Close) -> AmqpClosed:
    return AmqpClosed(
        f"the broker closed the {what}: {method.reply_code} {method.reply_text}", method.reply_code
    )
