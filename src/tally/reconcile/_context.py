"""What one sync run carries from step to step: its settings, its stats, and ``RunContext``, made once
when the run holds its cloud's lock and has its row, and handed to every step after that.

The steps (``_run``, ``_planning``) read the run from it rather than from a list of arguments threaded
by hand: the cloud, the store, the pipeline, the adapter's factory, the settings, the run's instant,
its bound (and the deleted-servers window it gives), its id, the record of earlier runs its planning
passes share, and the stats and progress it fills in as it goes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from tally.config import CloudEntry
from tally.core import format_instant
from tally.store import SYNC_LOCK_LEASE_S, ConnectionWaits, SizeName, SyncRow

from ._adapter import Adapter, Progress
from ._booking import IngestsEvents
from ._model import Deferral, DeferredCorrection
from ._record_reads import RecordReader
from ._rules import DeletedWindow, cap_errors, deleted_servers_window
from ._runs_read import RecordedRuns


class SyncStore(RecordReader, Protocol):
    """The store methods a run uses (``tally.store.Store`` provides them): the planning passes' reads
    and these."""

    async def sync_rows(self, cloud: str, resource_type: str) -> list[SyncRow]: ...
    async def learn_size_names(self, cloud: str, rows: Sequence[SizeName]) -> list[SizeName]: ...
    async def start_sync_run(self, cloud: str, started_at: datetime | None = None) -> str: ...
    async def finish_sync_run(
        self, run_id: str, status: Any, stats: Any, completed_at: datetime | None = None
    ) -> None: ...
    async def last_completed_sync_started_at(self, cloud: str) -> datetime | None: ...
    async def fail_stale_sync_runs(self, cloud: str, at: datetime | None = None) -> list[str]: ...
    async def list_sync_runs(self, cloud: str) -> list[dict[str, Any]]: ...
    async def newest_receipt(self) -> datetime | None: ...
    def sync_lock(self, cloud: str) -> Any: ...


@dataclass(slots=True)
class RunStats:
    """The stats document of a sync_runs row, built up as the run goes."""

    created: int = 0
    updated: int = 0
    deleted: int = 0
    errors: list[str] = field(default_factory=list)
    deferred: dict[Deferral, int] = field(default_factory=lambda: {d: 0 for d in Deferral})
    # Which corrections were deferred, by resource, and which types were listed to the end: what a later
    # reader (the compare, the absence pass) needs to tell which run could have booked a correction.
    deferred_corrections: list[DeferredCorrection] = field(default_factory=list)
    complete_types: list[str] = field(default_factory=list)
    # The store's newest event receipt once the run had read the rows (None: no event yet); written only
    # by a run that read them, so a reader can tell "held no row" from "did not record".
    rows_read: bool = False
    rows_read_through: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        document = {
            "created": self.created,
            "updated": self.updated,
            "deleted": self.deleted,
            "errors": cap_errors(self.errors),
            "error_count": len(self.errors),
            "deferred": {d.value: self.deferred[d] for d in Deferral},
            "deferred_resources": [d.to_json() for d in self.deferred_corrections],
            "complete_types": self.complete_types,
        }
        if self.rows_read:
            through = self.rows_read_through
            document["rows_read_through"] = format_instant(through) if through is not None else None
        return document


@dataclass(frozen=True, slots=True)
class RunSettings:
    """The settings every run of a deployment shares."""

    settle_s: int = 60
    budget_s: float = 45.0
    # The PostgreSQL sync lock's lease (TALLY_REPORTING_SYNC_LOCK_LEASE_S): with the budget, how long a
    # lock may be found held before nothing but a person frees it (the scheduler's HeldLockWatch).
    lock_lease_s: float = SYNC_LOCK_LEASE_S


@dataclass(frozen=True, slots=True)
class RunContext:
    """One run of one cloud that holds its lock and its row: made once, read by every step."""

    entry: CloudEntry
    store: SyncStore
    pipeline: IngestsEvents
    open_adapter: Callable[[CloudEntry], Adapter]
    settings: RunSettings
    # The reason the entry's adapter_config was refused at startup (the run then fails at once), or None.
    config_error: str | None
    # The run's instant; dated_by_wall: it is the wall clock's, so the run's end is recorded no earlier.
    poll_at: datetime
    dated_by_wall: bool
    # The last completed run's started_at (None: no run completed yet).
    bound: datetime | None
    run_id: str
    # The monotonic instants the run asked for its slot and began its work (slot, lock and row had).
    began: float
    worked_from: float
    waits: ConnectionWaits
    # The store's reads of the planning passes; the record of runs read once for all of them.
    record: RecordedRuns
    stats: RunStats
    progress: Progress = field(default_factory=Progress)

    @property
    def cloud(self) -> str:
        return self.entry.cloud

    @property
    def window(self) -> DeletedWindow:
        """Where the listing of deleted servers starts (``_rules.deleted_servers_window``)."""
        return deleted_servers_window(self.bound, self.poll_at, self.settings.settle_s)

    def remaining_s(self) -> float:
        """What is left of the budget for the work; never zero, so that a run whose waits took it all
        ends at once with the deadline error rather than a refusal of the Budget."""
        return max(self.settings.budget_s - (self.worked_from - self.began), 0.001)
