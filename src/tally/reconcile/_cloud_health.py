"""Each cloud's sync health: its last completed run and its last error, for ``/readyz`` and the metrics.

A cloud's record, not the process's probes (those are ``tally.http._probes``, which shows these records
through the "clouds" check the daemon registers). ``CloudHealth`` is plain data and ``HealthBoard`` the
board the service keeps up to date from run outcomes (and restores from ``sync_runs`` at start, so a
restart does not forget a failing cloud).

What ``/readyz`` shows of an error: its instant, its run and its kind, never the text of a run's
errors. ``/readyz`` needs no credential and those texts carry platform detail (seed 000 keeps them
out of the sync route's answer for that reason); they are read back from the run's row
(``GET /api/v1/sync-runs``). A run that never started because it waited past its budget (for a sync
slot or a database connection) has no row, and its reason names only our own wait, so that one is
shown in full.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from tally.core import format_instant


@dataclass(frozen=True, slots=True)
class CloudHealth:
    """One cloud's record. Invariant: ``last_error`` is set exactly when ``last_error_at`` is."""

    last_completed_at: datetime | None = None  # completed_at of its newest completed run
    last_completed_run: str | None = None
    last_error_at: datetime | None = None  # when its newest failed (or never-started) run ended
    last_error_run: str | None = None  # None: the run waited past its budget and wrote no row
    last_error: str | None = None

    @property
    def failing(self) -> bool:
        """The cloud's newest outcome is an error (no completed run since it)."""
        if self.last_error_at is None:
            return False
        return self.last_completed_at is None or self.last_error_at > self.last_completed_at

    def to_json(self) -> dict[str, Any]:
        def instant(value: datetime | None) -> str | None:
            return format_instant(value) if value is not None else None

        return {
            "failing": self.failing,
            "last_completed_at": instant(self.last_completed_at),
            "last_completed_run": self.last_completed_run,
            "last_error_at": instant(self.last_error_at),
            "last_error_run": self.last_error_run,
            "last_error": self.last_error,
        }


def failed_run_error(error_count: int) -> str:
    """What ``/readyz`` says of a failed run: how many errors, and where their text is."""
    return f"the run failed with {error_count} error(s); their text is in the run's sync_runs row"


def restored(runs: Iterable[Mapping[str, Any]]) -> CloudHealth:
    """A cloud's record from its ``sync_runs`` rows (as ``Store.list_sync_runs`` answers them)."""
    health = CloudHealth()
    for run in runs:
        finished = run.get("completed_at")
        if finished is None:
            continue
        if run["status"] == "completed":
            if health.last_completed_at is None or finished > health.last_completed_at:
                health = replace(health, last_completed_at=finished, last_completed_run=str(run["id"]))
        elif run["status"] == "failed" and (health.last_error_at is None or finished > health.last_error_at):
            stats = run.get("stats") or {}
            count = stats.get("error_count", len(stats.get("errors", ())))
            health = replace(
                health,
                last_error_at=finished,
                last_error_run=str(run["id"]),
                last_error=failed_run_error(int(count) if isinstance(count, int) else 0),
            )
    return health


class HealthBoard:
    """The board of every configured cloud. Invariant: holds exactly the configured clouds."""

    def __init__(self, clouds: Iterable[str]) -> None:
        self._clouds = {cloud: CloudHealth() for cloud in clouds}

    def restore(self, cloud: str, health: CloudHealth) -> None:
        self._clouds[cloud] = health

    def completed(self, cloud: str, run_id: str, at: datetime) -> None:
        self._clouds[cloud] = replace(self._clouds[cloud], last_completed_at=at, last_completed_run=run_id)

    def failed(self, cloud: str, run_id: str | None, at: datetime, error: str) -> None:
        self._clouds[cloud] = replace(
            self._clouds[cloud], last_error_at=at, last_error_run=run_id, last_error=error
        )

    def snapshot(self) -> dict[str, CloudHealth]:
        return dict(sorted(self._clouds.items()))
