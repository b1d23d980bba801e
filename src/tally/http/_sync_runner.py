"""The seam between ``POST /internal/sync/{cloud}`` and whoever runs a sync (the scheduler of a cloud).

The HTTP layer only knows this protocol: the reconciliation side implements it
and hands an instance to ``ReportingServices``. Without one, every cloud is
unknown (404), which is what the reference answers when no clouds config is set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol


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
class SyncOutcome:
    """What a finished run reports. ``failed`` makes the route answer 500 (without the run's errors)."""

    sync_run_id: str
    stats: Mapping[str, int] = field(default_factory=dict)  # created, updated, deleted (more are ignored)
    failed: bool = False


class SyncRunner(Protocol):
    async def run(self, cloud: str, at: datetime | None) -> SyncOutcome:
        """Run one sync of ``cloud`` at the told instant ``at`` (None: now) and return its outcome.

        Raises ``UnknownCloud`` or ``SyncAlreadyRunning``. Cancelling the call (the
        client went away, or the hold of budget + 15 s ran out) cancels the run.
        """
        ...
