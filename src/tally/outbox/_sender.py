"""The sender: delivers outbox rows to a sink in batches and deletes them once accepted.

It is woken by the outbox as soon as rows are committed (a notice in its mailbox, ``Outbox.tell_commits``)
and sends until the outbox is empty, at most ``batch_max`` rows a batch: what is committed while a
batch is on its way goes in the next. Every ``flush_interval_s`` without a notice it counts the rows
again (``Outbox.refresh``), for the rows another process commits (``tally collector replay``), which
no notice announces. Rules, in the order they apply to one batch:

* accepted: the rows go; items the sink refused are counted and logged (10 lines
  a minute, then one counting the rest, and the rest of the minute still open at
  the stop), never retried (the Reporting API dead-lettered them with their reason);
* 413 / too large: the batch halves (down to one row) and grows back by a
  quarter after every accepted batch, so one huge event cannot stall the rest
  for long and a transient limit does not shrink the sender for good;
* anything else: the rows stay and the sender backs off, doubling from
  ``backoff_min_s`` up to ``backoff_max_s``;
* the sink itself failing (5xx) ``narrow_after`` times in a row: one item may
  be what it cannot take, so the sender narrows. Each further server error
  halves the batch (a bisection: an accepted half goes, the rest is tried
  next); a row that fails alone becomes a suspect, left out of batches. Right
  after the next accepted batch (so the sink is known to work) a suspect is
  tried alone once more: accepted, it goes; a server error again, and it is
  dead-lettered in the outbox file (``Outbox.dead_letter``). When only
  suspects are left, an empty batch accepted is that proof. An outage fails
  every row, so no suspect ever meets an accepted batch: at most
  ``suspects_max`` rows are set aside and all of them are delivered once the
  sink is back.

An outbox that cannot write (``OutboxWriteError``: a full disk) fails the
delete of an accepted batch: the rows stay and the sender backs off as after a
failed delivery; sent again later, the sink answers them as duplicates.

Rows are only ever deleted after an acceptance (or moved to the dead letters),
so a crash between the delivery and the delete re-sends a batch the sink
already has: it answers those as duplicates of ``(event_id, timestamp)``.
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

from tally.actors import Mailbox
from tally.core import LogLimit

from . import _metrics
from ._outbox import Outbox, OutboxRow
from ._sink import DeliveryResult, DeliveryStatus, EventSink
from ._write_fault import OutboxWriteError

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
    suspects: int = 0
    dead_lettered: int = 0


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
        narrow_after: int = 5,
        suspects_max: int = 16,
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
        # A flood of refused events (a payload naming no resource, thousands a minute) must not drown
        # the log: each is counted in the metrics and dead-lettered by the API with its reason.
        self._refused_log = LogLimit(on_suppressed=_metrics.WARNINGS_SUPPRESSED.labels("refused").inc)
        self._last_accepted_at: float | None = None
        self._failing_since: float | None = None
        self._backoff_s = backoff_min_s
        self._narrow_after = narrow_after
        self._suspects_max = suspects_max
        # Server errors in a row; narrowing from the narrow_after-th until two batches in a row went
        # (both halves of a bisection step: the item at fault is not there) with no suspect left.
        self._server_errors = 0
        self._narrowing = False
        self._accepted_in_a_row = 0
        # The last delivery was accepted: a suspect failing alone now is at fault, not the sink.
        self._sink_works = False
        # Rows that failed alone with a server error, oldest first; left out of batches.
        self._suspects: list[OutboxRow] = []
        self._dead_lettered = 0
        # Notices of rows committed: one pending is all it takes (see the module docstring).
        self._mailbox: Mailbox[None] = Mailbox("sender", capacity=1)
        outbox.tell_commits(self._mailbox)
        _metrics.BATCH_SIZE.set(batch_max)

    def statistics(self) -> SenderStatistics:
        return SenderStatistics(
            self._batch_size,
            self._sent,
            self._failed,
            self._refused,
            self._last_accepted_at,
            self._failing_since,
            len(self._suspects),
            self._dead_lettered,
        )

    async def _deliver(self, rows: list[OutboxRow]) -> DeliveryResult:
        items: list[dict[str, Any]] = [_item(row.body) for row in rows]
        try:
            return await self._sink.deliver(items)
        except Exception as exc:
            log.exception("sender: sink raised; keeping the batch rows=%d", len(rows))
            return DeliveryResult(
                DeliveryStatus.RETRY, reason="sink_error", detail=f"{type(exc).__name__}", server_error=True
            )

    async def _send_one(self) -> bool | None:
        """Deliver the next batch: ``None`` when nothing is left, else whether to go on without a backoff."""
        if self._suspects and self._sink_works:
            return await self._retry_suspect()
        rows = await self._outbox.peek(self._batch_size, skip=[row.seq for row in self._suspects])
        if not rows:
            # Only suspects left: an empty batch shows whether the sink works at all.
            return await self._probe() if self._suspects else None
        result = await self._deliver(rows)
        if result.status is DeliveryStatus.ACCEPTED:
            await self._outbox.remove([row.seq for row in rows])
            self._on_accepted(result, len(rows))
            return True
        if result.status is DeliveryStatus.TOO_LARGE:
            self._failed += 1
            self._sink_works = False
            _metrics.BATCHES_FAILED.labels("too_large").inc()
            previous, self._batch_size = self._batch_size, max(1, len(rows) // 2)
            _metrics.BATCH_SIZE.set(self._batch_size)
            log.warning("sender: batch too large rows=%d next_batch=%d", len(rows), self._batch_size)
            # Even one event is too large for the sink now: wait rather than spin.
            return previous > 1
        self._on_failed(result, len(rows))
        return result.server_error and self._narrow(rows, result)

    def _narrow(self, rows: list[OutboxRow], result: DeliveryResult) -> bool:
        """After a server error: whether the sender narrowed (and goes on at once) or must back off."""
        self._server_errors += 1
        if self._server_errors < self._narrow_after and not self._narrowing:
            return False
        self._narrowing = True
        if len(rows) > 1:
            self._batch_size = max(1, len(rows) // 2)
            _metrics.BATCH_SIZE.set(self._batch_size)
            log.warning(
                "sender: narrowing after server errors rows=%d next_batch=%d", len(rows), self._batch_size
            )
            return True
        if len(self._suspects) >= self._suspects_max:
            return False
        self._suspects.append(rows[0])
        log.warning(
            "sender: event set aside after failing alone event_id=%s %s", rows[0].event_id, result.detail
        )
        return True

    async def _probe(self) -> bool:
        result = await self._deliver([])
        if result.status is DeliveryStatus.ACCEPTED:
            self._sink_works = True
            return True
        self._on_failed(result, 0)
        return False

    async def _retry_suspect(self) -> bool:
        """Try the oldest suspect alone; dead-letter it if it fails again while the sink works."""
        row = self._suspects[0]
        sink_worked = self._sink_works
        result = await self._deliver([row])
        if result.status is DeliveryStatus.ACCEPTED:
            self._suspects.pop(0)
            await self._outbox.remove([row.seq])
            self._on_accepted(result, 1)
            return True
        self._on_failed(result, 1)
        if not (result.server_error and sink_worked):
            return False
        self._suspects.pop(0)
        reason = f"{result.reason}: {result.detail}"[:500]
        await self._outbox.dead_letter(row, reason)
        self._dead_lettered += 1
        self._server_errors = 0
        self._narrowing = bool(self._suspects)
        log.error("sender: event dead-lettered event_id=%s reason=%s", row.event_id, reason)
        return True

    def _on_failed(self, result: DeliveryResult, rows: int) -> None:
        self._failed += 1
        self._sink_works = False
        self._accepted_in_a_row = 0
        reason = result.reason if result.reason in ("http_status", "network", "sink_error") else "sink_error"
        _metrics.BATCHES_FAILED.labels(reason).inc()
        if not result.server_error:
            self._server_errors = 0
        if self._failing_since is None:
            self._failing_since = time.time()
        log.warning(
            "sender: delivery failed reason=%s rows=%d retry_in_s=%.1f %s",
            reason,
            rows,
            self._backoff_s,
            result.detail,
        )

    def _on_accepted(self, result: DeliveryResult, rows: int) -> None:
        now = time.time()
        self._sent += 1
        self._last_accepted_at = now
        self._failing_since = None
        self._backoff_s = self._backoff_min_s
        self._server_errors = 0
        self._sink_works = True
        _metrics.BATCHES_SENT.inc()
        _metrics.LAST_ACCEPTED.set(now)
        _metrics.EVENTS_DELIVERED.labels("accepted").inc(result.accepted)
        _metrics.EVENTS_DELIVERED.labels("duplicate").inc(result.duplicates)
        if result.refused:
            self._refused += len(result.refused)
            _metrics.EVENTS_DELIVERED.labels("refused").inc(len(result.refused))
            for refusal in result.refused:
                if self._refused_log.allow():
                    log.warning(
                        "sender: event refused event_id=%s reason=%s", refusal.event_id, refusal.reason
                    )
        self._say_left_out(self._refused_log.summary())
        self._accepted_in_a_row += 1
        if self._narrowing and not self._suspects and self._accepted_in_a_row >= 2:
            self._narrowing = False
        if self._batch_size < self._batch_max and not self._narrowing:
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
                try:
                    went_on = await self._send_one()
                except OutboxWriteError:
                    # Logged by the outbox once per change of state; the rows stay.
                    return False
                if went_on is None:
                    return True
                if not went_on:
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

    async def _wait_for_commits(self) -> None:
        """Return at the outbox's next notice of rows committed (at once when one is pending), or
        after ``flush_interval_s`` with the rows counted again."""
        with anyio.move_on_after(self._flush_interval_s):
            await self._mailbox.receive()
            return
        # No notice comes for the rows another process commits (``tally collector replay``): this
        # slow look finds them, and refreshes the dead-letter gauge.
        await self._outbox.refresh()

    def _say_left_out(self, left_out: int) -> None:
        if left_out:
            log.warning(
                "sender: %d more refused events were not logged (each is counted in "
                'tally_collector_events_delivered_total{outcome="refused"})',
                left_out,
            )

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run until cancelled; the count of refusals left out of the log is said on the way out."""
        task_status.started()
        try:
            while True:
                if self._outbox.depth and not await self._send_until_empty_or_failure():
                    await self._back_off()
                    continue
                await self._wait_for_commits()
        finally:
            self._say_left_out(self._refused_log.drain())
