"""What a caller of a sync gets back: the outcome of a finished run, the three refusals, and the clouds check.

These are the reconciliation's own types. The HTTP route (``tally.http``, which
re-exports the first four under their old names) and the daemon's readiness
check (which adapts ``CloudsReadiness`` to its health type) sit on top of this
package and import from here; nothing here imports them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


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
    """What a finished run reports to the route (``tally.http.SyncOutcome``). ``failed`` makes the route
    answer 500 (without the run's errors)."""

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
