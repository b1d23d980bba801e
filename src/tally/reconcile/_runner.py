"""What a caller of a sync gets back: the outcome of a finished run, the two refusals, and the clouds check.

These are the reconciliation's own types. The HTTP route (``tally.http``, which
re-exports the first three under their old names) and the daemon's readiness
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


@dataclass(frozen=True, slots=True)
class RunnerOutcome:
    """What a finished run reports to the route (``tally.http.SyncOutcome``). ``failed`` makes the route
    answer 500 (without the run's errors)."""

    sync_run_id: str
    stats: Mapping[str, int] = field(default_factory=dict)  # created, updated, deleted (more are ignored)
    failed: bool = False


@dataclass(frozen=True, slots=True)
class CloudsReadiness:
    """The state of the clouds config for a readiness check: ``ready`` and a line saying why."""

    ready: bool
    detail: str
