"""``tally collector --dump``: print what arrives on the exchanges, credentials redacted.

The dump consumes from a private, exclusive, auto-deleted queue bound like the
collector's, so looking at the traffic never takes a notification away from
the collector's durable queue.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from typing import Any

import aio_pika
import anyio
from aio_pika.abc import AbstractIncomingMessage

from ._amqp import AmqpConfig, probe_exchanges, redact_url
from ._errors import CollectorError

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


async def run_dump(config: AmqpConfig, write: Callable[[str], None], *, count: int | None = None) -> int:
    present, missing = await probe_exchanges(config.url, config.exchanges)
    if not present:
        raise CollectorError(
            f"none of the exchanges {', '.join(config.exchanges)} exist on {redact_url(config.url)}"
        )
    connection = await aio_pika.connect(config.url)
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
