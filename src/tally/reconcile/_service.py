"""The sync service: the configured clouds, their startup check, and the one way to run a sync.

Both callers of a run go through ``SyncService``: the HTTP route (via ``run``,
the ``tally.http`` ``SyncRunner`` protocol) and each cloud's scheduler (via
``run_cloud``). The lock in the database, not this object, keeps one run per
cloud, so the same holds across replicas.

The startup check goes beyond the reference: every entry's adapter_config is
validated when the service is built. An invalid entry is logged with its cloud
and key, shown by ``tally_sync_cloud_config_invalid`` and by ``config_problems()``
(the /readyz details), and the daemon still starts: each run of that cloud then
records the reason in a failed sync_runs row, as the seed says.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from tally.config import CloudEntry, Settings, load_clouds_config
from tally.store import SyncLockHeld

from . import _metrics
from ._adapter import Adapter, adapter_class, check_adapter_environments, validate_adapter_config
from ._booking import IngestsEvents
from ._handover import take_over
from ._model import Status, SyncOutcome
from ._run import RunSettings, SyncStore, run_sync
from ._runner import CloudsReadiness, RunnerOutcome, SyncAlreadyRunning, UnknownCloud

log = logging.getLogger(__name__)


def _open_registered(entry: CloudEntry) -> Adapter:
    return adapter_class(entry.adapter)(entry)


class SyncService:
    """Runs syncs of the configured clouds; implements ``tally.http``'s ``SyncRunner``."""

    def __init__(
        self,
        entries: Sequence[CloudEntry],
        *,
        store: SyncStore,
        pipeline: IngestsEvents,
        settings: RunSettings,
        open_adapter: Callable[[CloudEntry], Adapter] = _open_registered,
    ) -> None:
        self._entries = {e.cloud: e for e in entries}
        self._store = store
        self._pipeline = pipeline
        self._settings = settings
        self._open_adapter = open_adapter
        self._problems: dict[str, str] = {}
        _metrics.SYNC_BUDGET.set(settings.budget_s)
        for entry in entries:
            _metrics.init_cloud(entry.cloud)
            reason = validate_adapter_config(entry)
            _metrics.CONFIG_INVALID.labels(entry.cloud).set(1 if reason else 0)
            if reason is not None:
                self._problems[entry.cloud] = reason
                log.error("clouds config entry refused cloud=%s reason=%s", entry.cloud, reason)

    @classmethod
    def from_settings(cls, settings: Settings, *, store: SyncStore, pipeline: IngestsEvents) -> SyncService:
        """The service of a daemon: the clouds config file it names (none: no cloud).

        Raises ``CloudsConfigError`` for a file that cannot be used (the process must not start);
        each configured adapter then checks its environment (an OpenStack one warns when
        OS_CLIENT_CONFIG_FILE is unset)."""
        path = settings.reporting_clouds_config
        entries = load_clouds_config(path) if path is not None else ()
        check_adapter_environments(entries)
        run_settings = RunSettings(
            settle_s=settings.reporting_sync_settle_s, budget_s=settings.reporting_sync_budget_s
        )
        return cls(entries, store=store, pipeline=pipeline, settings=run_settings)

    async def restore_last_completed(self) -> None:
        """Set each cloud's last-completed gauges from its newest completed row in ``sync_runs``, so
        that the stale-sync alert measures from the record, not from this process's start."""
        for cloud in sorted(self._entries):
            finished = last_completed_at(await self._store.list_sync_runs(cloud))
            if finished is not None:
                _metrics.mark_completed(cloud, finished.timestamp())
                log.info("last completed sync restored cloud=%s completed_at=%s", cloud, finished.isoformat())

    @property
    def entries(self) -> Mapping[str, CloudEntry]:
        return self._entries

    def config_problems(self) -> dict[str, str]:
        """Cloud → why its entry was refused at startup; for the /readyz details."""
        return dict(self._problems)

    async def readiness_check(self) -> CloudsReadiness:
        """The "clouds" entry of /readyz (the daemon adapts it): always ready (one cloud's typo must not
        stop the others), with the refused entries in its detail."""
        if not self._problems:
            return CloudsReadiness(True, f"{len(self._entries)} cloud(s) configured")
        detail = "; ".join(f"cloud {c}: {r}" for c, r in sorted(self._problems.items()))
        return CloudsReadiness(True, f"adapter_config refused, runs of these clouds fail: {detail}")

    async def run_cloud(
        self, cloud: str, at: datetime | None = None, *, min_gap_s: float | None = None
    ) -> SyncOutcome:
        """Run one sync of ``cloud``; the outcome says completed, failed, lock held, not due (with
        ``min_gap_s``, a scheduled run's: see ``run_sync``) or unknown cloud."""
        entry = self._entries.get(cloud)
        if entry is None:
            return SyncOutcome(Status.UNKNOWN_CLOUD, cloud)
        return await run_sync(
            entry,
            store=self._store,
            pipeline=self._pipeline,
            open_adapter=self._open_adapter,
            settings=self._settings,
            at=at,
            config_error=self._problems.get(cloud),
            min_gap_s=min_gap_s,
        )

    async def take_over(self, cloud: str) -> None:
        """Fail the rows of ``cloud`` a stopped holder left running, if its lock is free now (held:
        the holder is alive, or the next run that takes the lock does it)."""
        try:
            async with self._store.sync_lock(cloud):
                await take_over(self._store, cloud)
        except SyncLockHeld:
            pass

    async def run(self, cloud: str, at: datetime | None) -> RunnerOutcome:
        """The HTTP route's call: raises ``UnknownCloud`` (404) or ``SyncAlreadyRunning`` (409)."""
        outcome = await self.run_cloud(cloud, at)
        if outcome.status is Status.UNKNOWN_CLOUD:
            raise UnknownCloud(cloud)
        if outcome.status is Status.LOCK_HELD:
            raise SyncAlreadyRunning(cloud)
        assert outcome.sync_run_id is not None
        return RunnerOutcome(
            sync_run_id=outcome.sync_run_id,
            stats=outcome.to_json()["stats"],
            failed=outcome.status is Status.FAILED,
        )


def last_completed_at(runs: Iterable[Mapping[str, Any]]) -> datetime | None:
    """The newest ``completed_at`` among the completed runs (shaped as ``Store.get_sync_run`` answers)."""
    instants = [r["completed_at"] for r in runs if r["status"] == "completed" and r["completed_at"]]
    return max(instants, default=None)
