"""Driving a simulated month: the drain that waits until everything published reached ingest, and
the two ways of interleaving publishing with the syncs, lockstep (factor 0, skipping idle syncs) and
paced (the publisher on the running clock, the syncs at lockstep's instants). The drive reaches the
publisher and the clock only through their actors' mailboxes (``_month_actors``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import anyio

from tally.collector import Collector, InProcessBus
from tally.simulator.fakecloud import FakeCloudState
from tally.simulator.generator import Month

from ._gate import IngestGate
from ._idle import change_instants, sync_is_idle
from ._month_actors import ClockRef, PublisherRef
from ._run_state import COLLECTOR_EXCHANGES, SETTLE_S, RunProgress, SimulateOptions

log = logging.getLogger(__name__)

SyncAt = Callable[[datetime], Any]


class Drainer:
    """Waits until everything published reached ingest: the bus's own drain, or for RabbitMQ the
    collector having taken and committed as many deliveries as were published to its exchanges,
    then the sender's flush."""

    def __init__(self, collector: Collector, bus: InProcessBus | None) -> None:
        self._collector = collector
        self._bus = bus
        self._taken_base = collector.statistics().taken

    async def drain(self, publisher: PublisherRef) -> None:
        if self._bus is None:
            # Only what went to a bound exchange reaches the queue.
            published = await publisher.sent_to(tuple(COLLECTOR_EXCHANGES.split(",")))
            # Polling: the statistics have no event to wait on, and a drain happens once per sync.
            began = time.monotonic()
            while True:
                stats = self._collector.statistics()
                if stats.taken - self._taken_base >= published and stats.in_hand == 0:
                    break
                await anyio.sleep(0.01)
                if time.monotonic() - began > 10:
                    log.info(
                        "simulate waiting for the collector taken=%d published=%d",
                        stats.taken - self._taken_base,
                        published,
                    )
                    began = time.monotonic()
        await self._collector.drain()


async def lockstep(
    month: Month,
    publisher: PublisherRef,
    drainer: Drainer,
    sync: SyncAt,
    collector_accepted: Callable[[], int],
    options: SimulateOptions,
    progress: RunProgress,
    tell: Callable[[], None],
) -> None:
    changes = change_instants(month)
    last_completed: datetime | None = None
    accepted_then = 0
    # The first sync at the month's start, as the daemon syncs each cloud when it starts: the month's
    # deployment began there, and whatever the cloud held before is booked from what it held then.
    at = month.period_from
    while at < month.period_to:
        # Both modes drain at the same instants, so the store holds the same deliveries at each.
        if await publisher.publish_until(at):
            await drainer.drain(publisher)
        idle = sync_is_idle(
            changes,
            last_completed,
            at,
            events_since=collector_accepted() - accepted_then,
            settle_s=SETTLE_S,
        )
        if idle and options.skip_idle:
            progress.idle_skipped += 1
            progress.virtual_now = at
            progress.published = publisher.progress.published
            tell()
        else:
            completed = await sync(at)
            last_completed = at if completed else None
            accepted_then = collector_accepted()
        at += options.sync_interval
    await publisher.publish_until(month.period_to)


async def paced(
    month: Month,
    publisher: PublisherRef,
    clock: ClockRef,
    sync: SyncAt,
    options: SimulateOptions,
    cloud: FakeCloudState,
    gate: IngestGate,
) -> None:
    # The syncs run at the instants lockstep syncs at, whatever a sync costs in wall time, so no two
    # lie further apart than the interval the comparison tolerates. Each sees the month at its
    # instant: the fake cloud answers every listing from it, and the gate keeps what is dated after
    # it out of the store until the sync has read the rows. What the outbox has not delivered by then
    # is the lag seed 002 names, which the sync corrects.
    await clock.rebase(options.factor)
    at = month.period_from
    gate.hold_after(at)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(publisher.publish_paced)
            while at < month.period_to:
                await _until(clock, at)
                with cloud.answering_at(at):
                    await sync(at)
                at += options.sync_interval
                gate.hold_after(at)
    finally:
        gate.hold_after(None)
    await clock.rebase(0.0)


async def _until(clock: ClockRef, instant: datetime) -> None:
    """Sleep until the running clock reaches ``instant`` (at once if it is there already)."""
    reading = await clock.reading()
    ahead = (instant - reading.now).total_seconds()
    if ahead > 0:
        await anyio.sleep(ahead / reading.factor)
