"""``tally collector --dump``: print what arrives on the exchanges, credentials redacted.

The dump consumes from a private, exclusive, auto-deleted queue bound like the
collector's, so looking at the traffic never takes a notification away from
the collector's durable queue. It never declares the services' exchanges: it shows
what exists. It runs on aio-pika, not on the collector's lean client, because it
prints the message properties the lean client does not read; it is a person's
look at the traffic, off the consuming path.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import aio_pika
import aio_pika.exceptions
import anyio
from aio_pika.abc import AbstractIncomingMessage

from ._amqp import AmqpConfig
from ._errors import CollectorError
from ._url import AmqpAddress, redact_url

_SECRET_KEY = re.compile(r"token|password|passwd|secret|credential|auth|service_catalog", re.IGNORECASE)
REDACTED = "***"


def redact(value: Any) -> Any:
    """A copy of a JSON value with every member whose name looks like a credential replaced."""
    if isinstance(value, dict):
        return {
            k: (REDACTED if _SECRET_KEY.search(str(k)) and v is not None else redact(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def render_delivery(exchange: str, routing_key: str, properties: dict[str, Any], body: bytes) -> str:
    """One JSON line describing a delivery; the oslo envelope's inner message is decoded for reading."""
    shown: Any
    try:
        shown = json.loads(body)
        if isinstance(shown, dict) and isinstance(shown.get("oslo.message"), str):
            with contextlib.suppress(ValueError):
                shown = dict(shown, **{"oslo.message": json.loads(shown["oslo.message"])})
        shown = redact(shown)
    except ValueError:
        shown = {"unreadable_body_bytes": len(body), "head": body[:200].decode("utf-8", "replace")}
    return json.dumps(
        {"exchange": exchange, "routing_key": routing_key, "properties": properties, "body": shown},
        sort_keys=True,
        default=str,
    )


async def _connect(config: AmqpConfig) -> aio_pika.abc.AbstractConnection:
    """The first member of the URL's cluster that answers, over aio-pika (which reads properties)."""
    address: AmqpAddress = config.address()
    errors: list[str] = []
    for host in address.hosts:
        try:
            return await aio_pika.connect(
                host=host.host,
                port=host.port,
                login=host.username,
                password=host.password,
                virtualhost=address.vhost,
                ssl=address.tls,
                ssl_context=address.ssl_context(),
                timeout=address.connect_timeout_s,
            )
        except (OSError, TimeoutError, aio_pika.exceptions.AMQPError) as exc:
            errors.append(f"{host.where}: {exc}")
    raise CollectorError(
        f"cannot connect to the AMQP broker at {redact_url(config.url)}: {'; '.join(errors)}"
    )


async def _probe(
    connection: aio_pika.abc.AbstractConnection, names: Sequence[str]
) -> tuple[list[str], list[str]]:
    """Passively declare each exchange; (present, missing)."""
    present: list[str] = []
    missing: list[str] = []
    for name in names:
        channel = await connection.channel()
        try:
            await channel.declare_exchange(name, passive=True)
            present.append(name)
        except aio_pika.exceptions.ChannelClosed:
            missing.append(name)
        finally:
            if not channel.is_closed:
                await channel.close()
    return present, missing


async def run_dump(config: AmqpConfig, write: Callable[[str], None], *, count: int | None = None) -> int:
    connection = await _connect(config)
    present, missing = await _probe(connection, config.exchanges)
    if not present:
        await connection.close()
        raise CollectorError(
            f"none of the exchanges {', '.join(config.exchanges)} exist on {redact_url(config.url)}"
        )
    seen = 0
    done = anyio.Event()
    try:
        channel = await connection.channel()
        queue = await channel.declare_queue("", exclusive=True, auto_delete=True)
        for name in present:
            for topic in config.topics:
                await queue.bind(name, routing_key=topic)

        async def on_message(message: AbstractIncomingMessage) -> None:
            nonlocal seen
            properties = {
                "content_type": message.content_type,
                "content_encoding": message.content_encoding,
                "delivery_mode": int(message.delivery_mode) if message.delivery_mode else None,
                "priority": message.priority,
                "message_id": message.message_id,
            }
            write(
                render_delivery(message.exchange or "", message.routing_key or "", properties, message.body)
            )
            seen += 1
            if count is not None and seen >= count:
                done.set()

        await queue.consume(on_message, no_ack=True)
        if missing:
            write(json.dumps({"note": f"exchanges not present: {', '.join(missing)}"}))
        await done.wait()
    finally:
        with anyio.CancelScope(shield=True):
            await connection.close()
    return 0
