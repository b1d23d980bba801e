"""The sender: delivers outbox rows to a sink in batches and deletes them once accepted.

It wakes every ``flush_interval_s``, or as soon as ``batch_max`` rows wait, and
sends until the outbox is empty. Rules, in the order they apply to one batch:

* accepted: the rows go; items the sink refused are counted and logged, never
  retried (the Reporting API dead-lettered them with their reason);
* 413 / too large: the batch halves (down to one row) and grows back by a
  quarter after every accepted batch, so one huge event cannot stall the rest
  for long and a transient limit does not shrink the sender for good;
* anything else: the rows stay and the sender backs off, doubling from
  ``backoff_min_s`` up to ``backoff_max_s``.

Rows are only ever deleted after an acceptance, so a crash between the
delivery and the delete re-sends a batch the sink already has: it answers
those as duplicates of ``(event_id, timestamp)``.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass
from typing import Any

import anyio
import orjson
from anyio.abc import TaskStatus

from . import _metrics
from ._outbox import Outbox
from ._sink import DeliveryResult, DeliveryStatus, EventSink

log = logging.getLogger(__name__)


def _item(body: bytes) -> Any:
    """One stored event back as its wire object."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        # Integers beyond 64 bits, which orjson refuses and an event may carry.
        return json.loads(body)


@dataclass(frozen=True, slots=True)
class SenderStatistics:
    """batch_size: the current batch size; last_accepted_at: Unix time, None before the first."""

    batch_size: int
    batches_sent: int
    batches_failed: int
    refused: int
    last_accepted_at: float | None
    failing_since: float | None


class Sender:
    def __init__(
        self,
        outbox: Outbox,
        sink: EventSink,
        *,
        batch_max: int = 500,
        flush_interval_s: float = 5.0,
        backoff_min_s: float = 0.5,
        backoff_max_s: float = 30.0,
    ) -> None:
        self._outbox = outbox
        self._sink = sink
        self._batch_max = batch_max
        self._flush_interval_s = flush_interval_s
        self._backoff_min_s = backoff_min_s
        self._backoff_max_s = backoff_max_s
        # Invariant: 1 <= _batch_size <= _batch_max.
        self._batch_size = batch_max
        self._send_lock = anyio.Lock()
        self._sent = 0
        self._failed = 0
        self._refused = 0
        self._last_accepted_at: float | None = None
        self._failing_since: float | None = None
        self._backoff_s = backoff_min_s
        _metrics.BATCH_SIZE.set(batch_max)

    def statistics(self) -> SenderStatistics:
        return SenderStatistics(
            self._batch_size,
            self._sent,
            self._failed,
            self._refused,
            self._last_accepted_at,
            self._failing_since,
        )

    async def _send_one(self) -> DeliveryResult | None:
        """Deliver the oldest batch; ``None`` when the outbox is empty."""
        rows = await self._outbox.peek(self._batch_size)
        if not rows:
            return None
        items: list[dict[str, Any]] = [_item(row.body) for row in rows]
        try:
            result = await self._sink.deliver(items)
        except Exception as exc:
            log.exception("sender: sink raised; keeping the batch rows=%d", len(rows))
            result = DeliveryResult(DeliveryStatus.RETRY, reason="sink_error", detail=f"{type(exc).__name__}")
        if result.status is DeliveryStatus.ACCEPTED:
            await self._outbox.remove([row.seq for row in rows])
            self._on_accepted(result, len(rows))
        elif result.status is DeliveryStatus.TOO_LARGE:
            self._failed += 1
            _metrics.BATCHES_FAILED.labels("too_large").inc()
            self._batch_size = max(1, len(rows) // 2)
            _metrics.BATCH_SIZE.set(self._batch_size)
            log.warning("sender: batch too large rows=%d next_batch=%d", len(rows), self._batch_size)
        else:
            self._failed += 1
            reason = (
                result.reason if result.reason in ("http_status", "network", "sink_error") else "sink_error"
            )
            _metrics.BATCHES_FAILED.labels(reason).inc()
            if self._failing_since is None:
                self._failing_since = time.time()
            log.warning(
                "sender: delivery failed reason=%s rows=%d retry_in_s=%.1f %s",
                reason,
                len(rows),
                self._backoff_s,
                result.detail,
            )
        return result

    def _on_accepted(self, result: DeliveryResult, rows: int) -> None:
        now = time.time()
        self._sent += 1
        self._last_accepted_at = now
        self._failing_since = None
        self._backoff_s = self._backoff_min_s
        _metrics.BATCHES_SENT.inc()
        _metrics.LAST_ACCEPTED.set(now)
        _metrics.EVENTS_DELIVERED.labels("accepted").inc(result.accepted)
        _metrics.EVENTS_DELIVERED.labels("duplicate").inc(result.duplicates)
        if result.refused:
            self._refused += len(result.refused)
            _metrics.EVENTS_DELIVERED.labels("refused").inc(len(result.refused))
            for refusal in result.refused:
                log.warning("sender: event refused event_id=%s reason=%s", refusal.event_id, refusal.reason)
        if self._batch_size < self._batch_max:
            self._batch_size = min(
                self._batch_max, self._batch_size + max(1, math.ceil(self._batch_size / 4))
            )
            _metrics.BATCH_SIZE.set(self._batch_size)
        log.debug(
            "sender: batch accepted rows=%d accepted=%d duplicates=%d",
            rows,
            result.accepted,
            result.duplicates,
        )

    async def _send_until_empty_or_failure(self) -> bool:
        """Send batches until the outbox is empty (True) or a delivery failed (False)."""
        async with self._send_lock:
            while True:
                result = await self._send_one()
                if result is None:
                    return True
                if result.status is DeliveryStatus.RETRY:
                    return False
                if result.status is DeliveryStatus.TOO_LARGE and self._batch_size == 1:
                    # Even one event is too large for the sink now: wait rather than spin.
                    return False

    async def _back_off(self) -> None:
        await anyio.sleep(self._backoff_s)
        self._backoff_s = min(self._backoff_max_s, self._backoff_s * 2)

    async def flush_until_empty(self) -> None:
        """Deliver everything the outbox holds now, retrying with backoff until the sink took it.

        For tests and the simulator's lockstep mode; bound it with a cancel scope
        when the sink may never come back.
        """
        while not await self._send_until_empty_or_failure():
            await self._back_off()

    async def _wait_for_work(self) -> None:
        with anyio.move_on_after(self._flush_interval_s):
            while self._outbox.depth < self._batch_size:
                await self._outbox.wait_changed()

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run until cancelled."""
        task_status.started()
        while True:
            await self._wait_for_work()
            if self._outbox.depth and not await self._send_until_empty_or_failure():
                await self._back_off()
