"""The seam between ``POST /internal/sync/{cloud}`` and whoever runs a sync (the scheduler of a cloud).

The HTTP layer only knows this protocol: the reconciliation side implements it
and hands an instance to ``ReportingServices``. Without one, every cloud is
unknown (404), which is what the reference answers when no clouds config is set.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

# The outcome is the reconciliation's type (the arrows point from here to it), under its one name.
from tally.reconcile import RunnerOutcome

__all__ = ["SyncRunner"]


class SyncRunner(Protocol):
    async def run(self, cloud: str, at: datetime | None) -> RunnerOutcome:
        """Run one sync of ``cloud`` at the told instant ``at`` (None: now) and return its outcome.

        Raises ``UnknownCloud``, ``SyncAlreadyRunning`` or ``SyncNotStarted``. Cancelling the call (the
        client went away, or the hold of budget + 15 s ran out) cancels the run.
        """
        ...
