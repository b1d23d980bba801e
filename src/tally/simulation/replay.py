"""``tally simulator replay``: a notifications file an earlier run wrote, onto RabbitMQ again.

The whole file is read and checked before the first publish, so a broken line (named by its
number) stops the replay with nothing sent. At a factor above 0 the lines are paced by the oslo
timestamp inside each envelope, from the first one's; a body that has none (a truncated twin) goes
right after the line before it. Factor 0 publishes as fast as the broker confirms.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import orjson

from tally.collector import parse_oslo_timestamp
from tally.simulator.files import read_notifications

from .publisher import CONFIRM_WINDOW, Sink

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Line:
    exchange: str
    routing_key: str
    body: bytes
    timestamp: datetime | None


def _timestamp(body: dict[str, Any] | str) -> datetime | None:
    if not isinstance(body, dict):
        return None
    try:
        inner = orjson.loads(body.get("oslo.message", "")) if "oslo.message" in body else body
        return parse_oslo_timestamp(inner.get("timestamp")) if isinstance(inner, dict) else None
    except (orjson.JSONDecodeError, ValueError, TypeError):
        return None


def read_lines(path: Path) -> list[Line]:
    """Every line of the file; raises NotificationFileError naming the first broken one."""
    out = []
    for doc in read_notifications(path):
        body = doc["body"]
        data = body.encode() if isinstance(body, str) else orjson.dumps(body)
        out.append(Line(doc["exchange"], doc["routing_key"], data, _timestamp(body)))
    return out


async def replay(
    lines: Sequence[Line],
    sink: Sink,
    *,
    factor: float,
    on_progress: Callable[[int, int], None] = lambda sent, total: None,
) -> int:
    """Publish ``lines`` in order, paced at ``factor``; returns how many were published.

    ``on_progress(sent, total)`` is called after each confirmed window."""
    first = next((line.timestamp for line in lines if line.timestamp is not None), None)
    began = time.monotonic()
    sent = 0
    pending: list[tuple[str, str, bytes]] = []
    for line in lines:
        if factor > 0 and first is not None and line.timestamp is not None:
            due = began + max((line.timestamp - first).total_seconds(), 0.0) / factor
            wait = due - time.monotonic()
            if wait > 0:
                if pending:
                    await sink.publish_many(pending)
                    sent += len(pending)
                    pending = []
                    on_progress(sent, len(lines))
                await anyio.sleep(wait)
        pending.append((line.exchange, line.routing_key, line.body))
        if len(pending) >= CONFIRM_WINDOW:
            await sink.publish_many(pending)
            sent += len(pending)
            pending = []
            on_progress(sent, len(lines))
    if pending:
        await sink.publish_many(pending)
        sent += len(pending)
    on_progress(sent, len(lines))
    log.info("replay finished published=%d seconds=%.1f", sent, time.monotonic() - began)
    return sent
