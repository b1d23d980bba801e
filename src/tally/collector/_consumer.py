"""The consumer loop: deliveries in, events committed to the outbox, then the acks. One per source.

Group commit is the heart of it. The loop waits for one delivery, then takes
whatever else the source has already handed over (up to ``batch_limit``),
decodes and maps them all, commits the mapped events in one transaction, and
only then acks the whole group. Skipped and unparseable bodies are acked with
their group, counted by reason, so bad input never blocks the queue.

Warnings about bad messages (unparseable, no owner) are limited to 10 a minute of each kind, with
one line for the count of those left out (``tally.core.LogLimit``), said when a minute is over and
when the loop stops; the metrics count every one, and those left out of the log as well.

Backpressure: before taking a group the loop checks the outbox. At
``buffer_max`` rows it stops taking until the sender has brought the depth
down to 90 %; the source's prefetch window then fills and the broker stops
delivering, so nothing piles up in memory either.

A group the outbox cannot commit (``OutboxWriteError``: a full disk, a
read-only file) stays in hand, unacked, and is committed again after a backoff
(doubling from ``retry_min_s`` to ``retry_max_s``) until it goes; meanwhile
the loop takes nothing more, so the broker keeps the rest. The outbox says the
fault once and names it for ``/readyz`` (``Outbox.write_problem``).
"""

from __future__ import annotations

import logging
import math
from collections import Counter

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from tally.core import LogLimit
from tally.outbox import WARNINGS_SUPPRESSED, Outbox, OutboxWriteError

from . import _metrics
from ._delivery import Delivery, Source
from ._mapping import map_notification
from ._outcome import Mapped, Skipped, Unparseable

log = logging.getLogger(__name__)


class Consumer:
    def __init__(
        self,
        outbox: Outbox,
        *,
        cloud: str,
        buffer_max: int,
        batch_limit: int = 1000,
        retry_min_s: float = 0.25,
        retry_max_s: float = 5.0,
    ) -> None:
        self._outbox = outbox
        self._retry_min_s = retry_min_s
        self._retry_max_s = retry_max_s
        self._cloud = cloud
        self._buffer_max = buffer_max
        self._resume_at = math.floor(buffer_max * 0.9)
        self._batch_limit = batch_limit
        # Bad messages are all counted; their warnings are limited (a flood must not drown the log).
        self._unparseable_log = LogLimit(on_suppressed=WARNINGS_SUPPRESSED.labels("unparseable").inc)
        self._owner_missing_log = LogLimit(on_suppressed=WARNINGS_SUPPRESSED.labels("owner_missing").inc)
        # Invariant: taken == acked + in_hand; a delivery counts as acked once its group committed.
        self.taken = 0
        self.acked = 0
        self.in_hand = 0

    async def _wait_for_room(self) -> None:
        if self._outbox.depth < self._buffer_max:
            return
        _metrics.PAUSED.set(1)
        log.warning(
            "collector: outbox full, consuming paused depth=%d max=%d", self._outbox.depth, self._buffer_max
        )
        while self._outbox.depth > self._resume_at:
            await self._outbox.wait_changed()
        _metrics.PAUSED.set(0)
        log.info("collector: consuming resumed depth=%d", self._outbox.depth)

    def _rows(self, batch: list[Delivery]) -> list[tuple[str, bytes]]:
        rows: list[tuple[str, bytes]] = []
        # Counted once per type and group: a labelled counter's lookup costs more than the increment.
        received: Counter[str] = Counter()
        for delivery in batch:
            outcome = (
                map_notification(delivery.body, cloud=self._cloud)
                if delivery.oversized is None
                else Unparseable("oversized", delivery.oversized)
            )
            if isinstance(outcome, Mapped):
                received[outcome.oslo_event_type] += 1
                rows.append((outcome.event_id, outcome.text))
                if not outcome.event["project_id"]:
                    # Sent all the same: the Reporting API refuses it and keeps it as a dead letter
                    # (the item whole, with the reason), where an operator can see and replay it.
                    _metrics.OWNER_MISSING.labels(outcome.oslo_event_type).inc()
                    if self._owner_missing_log.allow():
                        log.warning(
                            "collector: no owner in payload or context, the API will dead-letter it "
                            "event_type=%s resource_id=%s message_id=%s",
                            outcome.oslo_event_type,
                            outcome.event["resource_id"],
                            outcome.event_id,
                        )
            elif isinstance(outcome, Skipped):
                received[outcome.event_type] += 1
                _metrics.SKIPPED.labels(outcome.event_type, outcome.reason).inc()
                log.debug(
                    "collector: skipped event_type=%s reason=%s message_id=%s",
                    outcome.event_type,
                    outcome.reason,
                    outcome.message_id,
                )
            else:
                _metrics.UNPARSEABLE.labels(outcome.reason).inc()
                if self._unparseable_log.allow():
                    log.warning(
                        "collector: unparseable body reason=%s message_id=%s exchange=%s routing_key=%s "
                        "detail=%s",
                        outcome.reason,
                        outcome.message_id or "-",
                        delivery.exchange,
                        delivery.routing_key,
                        outcome.detail[:200],
                    )
        for event_type, count in received.items():
            _metrics.RECEIVED.labels(event_type).inc(count)
        self._say_left_out(stopping=False)
        return rows

    def _say_left_out(self, *, stopping: bool) -> None:
        for limit, what, metric in (
            (self._unparseable_log, "unparseable bodies", "tally_collector_unparseable_total"),
            (self._owner_missing_log, "events without an owner", "tally_collector_owner_missing_total"),
        ):
            if left_out := limit.drain() if stopping else limit.summary():
                log.warning(
                    "collector: %d more %s were not logged in the last %.0f s (each is counted in %s)",
                    left_out,
                    what,
                    limit.window_s,
                    metric,
                )

    async def _commit(self, rows: list[tuple[str, bytes]]) -> int:
        """Commit ``rows``, trying again with backoff while the outbox cannot write; how many were new."""
        delay = self._retry_min_s
        while True:
            try:
                return await self._outbox.add(rows)
            except OutboxWriteError:
                # The outbox logged it; the deliveries stay unacked in hand until the commit goes.
                await anyio.sleep(delay)
                delay = min(self._retry_max_s, delay * 2)

    async def consume(self, deliveries: MemoryObjectReceiveStream[Delivery], source: Source) -> None:
        """Run until the stream ends (the bus closed) or the task is cancelled; the count of warnings
        left out of the log is said on the way out."""
        try:
            await self._consume(deliveries, source)
        finally:
            self._say_left_out(stopping=True)

    async def _consume(self, deliveries: MemoryObjectReceiveStream[Delivery], source: Source) -> None:
        while True:
            await self._wait_for_room()
            try:
                first = await deliveries.receive()
            except anyio.EndOfStream:
                return
            batch = [first]
            while len(batch) < self._batch_limit:
                try:
                    batch.append(deliveries.receive_nowait())
                except (anyio.WouldBlock, anyio.EndOfStream):
                    break
            self.in_hand = len(batch)
            self.taken += len(batch)
            added = await self._commit(self._rows(batch))
            _metrics.COMMITTED.inc(added)
            await source.ack(batch)
            _metrics.ACKED.inc(len(batch))
            self.acked += len(batch)
            self.in_hand = 0
