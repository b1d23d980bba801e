"""The seam between ``POST /internal/sync/{cloud}`` and whoever runs a sync (the scheduler of a cloud).

The HTTP layer only knows this protocol: the reconciliation side implements it
and hands an instance to ``ReportingServices``. Without one, every cloud is
unknown (404), which is what the reference answers when no clouds config is set.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

# The outcome and the refusals are the reconciliation's types (the arrows point from here to it);
# re-exported from tally.http under their names of old.
from tally.reconcile import RunnerOutcome as SyncOutcome
from tally.reconcile import SyncAlreadyRunning as SyncAlreadyRunning
from tally.reconcile import SyncNotStarted as SyncNotStarted
from tally.reconcile import UnknownCloud as UnknownCloud

__all__ = ["SyncAlreadyRunning", "SyncNotStarted", "SyncOutcome", "SyncRunner", "UnknownCloud"]


class SyncRunner(Protocol):
    async def run(self, cloud: str, at: datetime | None) -> SyncOutcome:
        """Run one sync of ``cloud`` at the told instant ``at`` (None: now) and return its outcome.

        Raises ``UnknownCloud``, ``SyncAlreadyRunning`` or ``SyncNotStarted``. Cancelling the call (the
        client went away, or the hold of budget + 15 s ran out) cancels the run.
        """
        ...
