"""The built-in scheduler: one actor per configured cloud, in place of the reference's CronJob.

Each actor first learns the cloud's size names (cinder's volume types, ``_names``), then runs its
first sync at its place in the stagger (``_pacing.first_delay``: cloud ``i`` of the ``n`` scheduled
clouds, by name, at ``i/n`` of its interval, the first at once) and then every ``sync_interval_s``
seconds (start to start) with ±10 % jitter, so replicas and clouds do not fire in lockstep; an
interval of 0 means the cloud is synced only on request (its actor only fails, at start, the rows a
stopped replica left running). A scheduled run that finds the lock held (another replica, or an HTTP
trigger) skips: the next tick tries again. So does one that finds the cloud synced less than
``interval × (1 − 2 × jitter)`` ago by another replica (``_handover``), so that replicas sync each
cloud about once an interval between them, not once each; in told-instant mode run instants are
virtual, not comparable with the interval, and that rule is off. Every run takes a slot of the
service's cap first (``_service``).

Told-instant mode (``TALLY_REPORTING_SYNC_CLOCK_URL``) is seed 002's development
loop built in: before each run the actor reads the simulator's ``GET /clock`` and
tells the run ``at = min(virtual_now, period_to)``.

Runs on request reach the actor through its mailbox (``RunRequests``: ``POST /internal/sync`` asks, see
``_runner.SchedulerRunner``), so the actor is the one place where the cloud's runs start in this
process and two of them never overlap here: a request that finds a run of the cloud in progress is
answered "lock held" at once (409, as the database lock answers for a run on another replica), and a
scheduled tick that finds a requested run in progress skips as it skips a lock held elsewhere. The
database lock still keeps one run per cloud across replicas and processes. A requested run is done in
a task of the actor, cancelled when its caller withdraws (the client went away). At the stop request
the mailbox is closed: requests still queued are dropped (the caller gets 503), a run in progress
finishes within the grace.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from datetime import datetime

import anyio
import httpx

from tally.actors import ActorContext, Request
from tally.core import InstantError, parse_instant

from . import _metrics
from ._model import Status, SyncOutcome
from ._pacing import JITTER, first_delay, next_delay
from ._runner import RunRequests, run_requests
from ._service import SyncService

log = logging.getLogger(__name__)


class ClockUnreadable(Exception):
    """The simulator's clock did not answer with virtual_now and period_to."""


async def read_told_instant(client: httpx.AsyncClient, clock_url: str) -> datetime:
    """``min(virtual_now, period_to)`` from the simulator's ``GET /clock``."""
    try:
        response = await client.get(clock_url)
        response.raise_for_status()
        document = response.json()
        virtual_now = parse_instant(document["virtual_now"])
        period_to = parse_instant(document["period_to"])
    except (httpx.HTTPError, ValueError, KeyError, TypeError, InstantError) as exc:
        raise ClockUnreadable(f"reading the clock at {clock_url}: {exc}") from exc
    return min(virtual_now, period_to)


async def run_cloud_scheduler(
    service: SyncService,
    cloud: str,
    ctx: ActorContext,
    *,
    clock_url: str | None = None,
    rng: random.Random | None = None,
    requests: RunRequests | None = None,
) -> None:
    """Sync ``cloud`` at its place in the stagger, then on its interval, and on each request of
    ``requests`` (the tree's mailbox for the cloud; None: a mailbox of its own, nobody asking), until
    the supervisor asks it to stop."""
    entry = service.entries[cloud]
    rng = rng or random.Random()
    turn = _Turn(service, cloud)
    if entry.sync_interval_s == 0:
        # Taken over before the actor says it started: the daemon is ready only after, so a run asked
        # for at once never meets this short hold of the lock as "a sync is already running".
        await service.take_over(cloud)
    inbox = requests if requests is not None else run_requests(cloud)
    async with anyio.create_task_group() as tg:
        tg.start_soon(turn.serve, inbox, ctx)
        ctx.started()
        try:
            if entry.sync_interval_s == 0:
                await _learn_size_names(service, cloud, ctx)
                await ctx.wait_stopping()
            else:
                await _on_schedule(turn, entry.sync_interval_s, ctx, clock_url, rng)
        finally:
            if ctx.stopping:
                # Not after a crash: what is queued waits for the restarted actor. At a stop, ``serve``
                # drops what is queued and ends once a requested run in progress ended.
                inbox.close()


async def _on_schedule(
    turn: _Turn, interval_s: float, ctx: ActorContext, clock_url: str | None, rng: random.Random
) -> None:
    service, cloud = turn.service, turn.cloud
    intervals = {c: e.sync_interval_s for c, e in service.entries.items()}
    delay = first_delay(cloud, intervals, rng)
    # The stagger counts from the actor's start: the names' listing takes its time out of the delay.
    first_at = anyio.current_time() + delay
    if delay > 0:
        log.info("first scheduled sync cloud=%s in_s=%.1f", cloud, delay)
    await _learn_size_names(service, cloud, ctx)
    with anyio.move_on_at(first_at):
        await ctx.wait_stopping()
    min_gap_s = None if clock_url is not None else min_gap(interval_s)
    watch = HeldLockWatch(cloud, service.budget_s + service.lock_lease_s)
    async with httpx.AsyncClient(timeout=10.0) as client:
        while not ctx.stopping:
            # From tick to tick, not from a run's end: a run's length must not stretch the cadence (the
            # replicas between them would sync the cloud less than once an interval).
            next_at = anyio.current_time() + next_delay(interval_s, rng)
            await _tick(turn, client, clock_url, min_gap_s, watch)
            with anyio.move_on_at(next_at):
                await ctx.wait_stopping()


class _Turn:
    """Whether a run of the cloud is in progress in this process: the state the actor's tasks (the
    schedule and the requests) share, and the one way they start a run."""

    def __init__(self, service: SyncService, cloud: str) -> None:
        self.service = service
        self.cloud = cloud
        self._running = False

    async def run(self, at: datetime | None, min_gap_s: float | None = None) -> SyncOutcome:
        """A scheduled run, or "lock held" at once while another of this process is in progress."""
        if self._running:
            return self._held()
        self._running = True
        try:
            return await self.service.run_cloud(self.cloud, at, min_gap_s=min_gap_s)
        finally:
            self._running = False

    async def serve(self, inbox: RunRequests, ctx: ActorContext) -> None:
        """Take each request as it comes: answered at once while a run is in progress, else run in a
        task of its own, so that the next request is taken meanwhile; ends when the inbox is closed
        and the run in progress ended."""
        async with anyio.create_task_group() as runs:
            while True:
                try:
                    request = await inbox.receive()
                except anyio.EndOfStream:
                    return
                if ctx.stopping:
                    request.drop()
                elif self._running:
                    request.answer(self._held())
                else:
                    # Marked here, not in the task: the next request, taken before the task's first
                    # step, must find the cloud busy.
                    self._running = True
                    runs.start_soon(self._requested, request)

    async def _requested(self, request: Request[datetime | None, SyncOutcome]) -> None:
        async def run(at: datetime | None) -> SyncOutcome:
            return await self.service.run_cloud(self.cloud, at)

        try:
            await request.handle(run)
        finally:
            self._running = False

    def _held(self) -> SyncOutcome:
        # What the database lock answers a second run, without asking it: the same count, log and 409.
        _metrics.SYNC_RUNS.labels(self.cloud, "skipped").inc()
        log.info("sync already running in this process cloud=%s", self.cloud)
        return SyncOutcome(Status.LOCK_HELD, self.cloud)


async def _learn_size_names(service: SyncService, cloud: str, ctx: ActorContext) -> None:
    """Before anything else, so that a notification arriving before the first run finds its volume
    type's name (``_names``); given up at once when the actor is asked to stop."""
    async with anyio.create_task_group() as tg:

        async def learn() -> None:
            await service.learn_size_names(cloud)
            tg.cancel_scope.cancel()

        tg.start_soon(learn)
        await ctx.wait_stopping()
        tg.cancel_scope.cancel()


def min_gap(interval_s: float) -> float:
    """The least time between two scheduled runs of a cloud across replicas: below the shortest wait
    ``next_delay`` draws, so that a replica's own cadence is never skipped."""
    return interval_s * (1.0 - 2 * JITTER)


class HeldLockWatch:
    """How long a cloud's scheduled runs have found its lock held by another run, run after run.

    A live holder ends within its run's budget and a hung one loses its lease
    (``TALLY_REPORTING_SYNC_LOCK_LEASE_S``), so a lock still found held past both is one nothing frees:
    that is said once, at WARNING, and the gauge keeps counting for the alert. Each skip below that
    stays at INFO, as replicas taking turns skip runs all the time."""

    def __init__(self, cloud: str, threshold_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._cloud = cloud
        self._threshold_s = threshold_s
        self._clock = clock
        self._since: float | None = None
        self._warned = False
        _metrics.LOCK_HELD_SECONDS.labels(cloud).set(0)

    def held(self) -> None:
        now = self._clock()
        if self._since is None:
            self._since = now
        held_s = now - self._since
        _metrics.LOCK_HELD_SECONDS.labels(self._cloud).set(held_s)
        if held_s >= self._threshold_s and not self._warned:
            self._warned = True
            log.warning(
                "sync lock held by another run for %.0f s, past the budget and the lease cloud=%s: "
                "look for the session named 'tally sync lock %s'",
                held_s,
                self._cloud,
                self._cloud,
            )

    def free(self) -> None:
        if self._warned and self._since is not None:
            log.warning(
                "sync lock free again after %.0f s cloud=%s", self._clock() - self._since, self._cloud
            )
        self._since, self._warned = None, False
        _metrics.LOCK_HELD_SECONDS.labels(self._cloud).set(0)


async def _tick(
    turn: _Turn,
    client: httpx.AsyncClient,
    clock_url: str | None,
    min_gap_s: float | None,
    watch: HeldLockWatch,
) -> None:
    cloud = turn.cloud
    at: datetime | None = None
    if clock_url is not None:
        try:
            at = await read_told_instant(client, clock_url)
        except ClockUnreadable as exc:
            log.warning("scheduled sync skipped cloud=%s reason=%s", cloud, exc)
            return
    outcome = await turn.run(at, min_gap_s)
    if outcome.status is Status.LOCK_HELD:
        watch.held()
    elif outcome.status is not Status.NOT_STARTED:
        watch.free()
    if outcome.status in (Status.LOCK_HELD, Status.NOT_DUE):
        log.info("scheduled sync skipped cloud=%s reason=%s", cloud, outcome.status.value)
    elif outcome.status is Status.NOT_STARTED:
        log.warning("scheduled sync skipped cloud=%s reason=%s", cloud, outcome.stats["errors"][0])
