"""What a caller of a sync gets back: the outcome of a finished run, the three refusals, and the clouds check;
and the daemon's runner of requested syncs, which asks the cloud's scheduler actor.

These are the reconciliation's own types. The HTTP route (``tally.http``, which
re-exports the first four under their old names) and the daemon's readiness
check (which adapts ``CloudsReadiness`` to its health type) sit on top of this
package and import from here; nothing here imports them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeAlias

from tally.actors import ActorStopped, Mailbox, Request, ask

from ._model import Status, SyncOutcome


class UnknownCloud(Exception):
    """No configured cloud has this name: the route answers 404."""

    def __init__(self, cloud: str) -> None:
        super().__init__(f"no cloud {cloud!r} is configured")
        self.cloud = cloud


class SyncAlreadyRunning(Exception):
    """A sync of this cloud holds the lock (here or on another replica): the route answers 409."""

    def __init__(self, cloud: str) -> None:
        super().__init__(f"a sync for cloud {cloud!r} is already running")
        self.cloud = cloud


class SyncNotStarted(Exception):
    """The run waited its whole budget for a sync slot or a database connection: the route answers 503."""

    def __init__(self, cloud: str, reason: str) -> None:
        super().__init__(f"the sync of cloud {cloud!r} did not start: {reason}")
        self.cloud = cloud
        self.reason = reason


@dataclass(frozen=True, slots=True)
class RunnerOutcome:
    """What a finished run reports to the route (through ``tally.http.SyncRunner``). ``failed`` makes the
    route answer 500 (without the run's errors)."""

    sync_run_id: str
    stats: Mapping[str, int] = field(default_factory=dict)  # created, updated, deleted (more are ignored)
    failed: bool = False


@dataclass(frozen=True, slots=True)
class CloudsReadiness:
    """The state of the clouds for a readiness check: ``ready``, a line saying why, and each cloud's
    health (``CloudHealth.to_json``) by name."""

    ready: bool
    detail: str
    clouds: Mapping[str, Mapping[str, object]] = field(default_factory=dict)


RunRequests: TypeAlias = Mailbox[Request[datetime | None, SyncOutcome]]
"""A cloud scheduler's mailbox: runs asked for, each at a told instant (None: now), answered with the
run's outcome."""

REQUESTS_CAPACITY = 8
"""Requests are taken at once (answered "lock held" or started), so the queue stays short; a full
one makes the askers wait, not the actor."""


def run_requests(cloud: str) -> RunRequests:
    """The mailbox of ``cloud``'s scheduler, made before the actor so the front end can hold it."""
    return Mailbox(f"sync-scheduler:{cloud}", REQUESTS_CAPACITY)


def _answer_of(outcome: SyncOutcome) -> RunnerOutcome:
    """The route's answer to a run's outcome: the outcome of a run that started, or the refusal."""
    if outcome.status is Status.UNKNOWN_CLOUD:
        raise UnknownCloud(outcome.cloud)
    if outcome.status is Status.LOCK_HELD:
        raise SyncAlreadyRunning(outcome.cloud)
    if outcome.status is Status.NOT_STARTED:
        raise SyncNotStarted(outcome.cloud, str(outcome.stats["errors"][0]))
    assert outcome.sync_run_id is not None
    return RunnerOutcome(
        sync_run_id=outcome.sync_run_id,
        stats=outcome.to_json()["stats"],
        failed=outcome.status is Status.FAILED,
    )


class SchedulerRunner:
    """``tally.http``'s ``SyncRunner`` in the daemon: asks the cloud's scheduler actor for a run, through
    its mailbox, and awaits the reply. Cancelling ``run`` withdraws the request, which cancels the run."""

    def __init__(self, mailboxes: Mapping[str, RunRequests]) -> None:
        self._mailboxes = mailboxes

    async def run(self, cloud: str, at: datetime | None) -> RunnerOutcome:
        """Raises ``UnknownCloud`` (no scheduler of that name), ``SyncAlreadyRunning`` or
        ``SyncNotStarted`` (also when the scheduler stopped before it answered)."""
        mailbox = self._mailboxes.get(cloud)
        if mailbox is None:
            raise UnknownCloud(cloud)
        try:
            outcome = await ask(mailbox, at)
        except ActorStopped:
            raise SyncNotStarted(cloud, "the cloud's scheduler stopped before it answered") from None
        return _answer_of(outcome)
