"""The sync service: the configured clouds, their startup check, and the one way to run a sync.

Every run goes through ``SyncService.run_cloud``: in the daemon, only each cloud's scheduler actor
calls it, for its schedule and for the requests of ``POST /internal/sync`` (``_scheduler``); the
one-shot callers (``tally sync``, the simulator) call it directly. The scheduler keeps one run per
cloud in its process; the lock in the database, not this object, keeps one run per cloud across
processes and replicas.

Runs are capped (``TALLY_REPORTING_SYNC_MAX_CONCURRENT``, by default half the pool, see ``_pacing``):
every run of the process, scheduled or requested, takes a slot first, and the wait counts against
its budget. Each cloud's health (last completed run, last error; ``_cloud_health``) is kept from the
outcomes and restored from ``sync_runs`` at start, for the "clouds" check of /readyz and the
``tally_sync_last_*_timestamp_seconds`` gauges.

The startup check goes beyond the reference: every entry's adapter_config is
validated when the service is built. An invalid entry is logged with its cloud
and key, shown by ``tally_sync_cloud_config_invalid`` and by ``config_problems()``
(the /readyz details), and the daemon still starts: each run of that cloud then
records the reason in a failed sync_runs row, as the seed says.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import anyio

from tally.config import CloudEntry, Settings, load_clouds_config
from tally.core import utc_now
from tally.store import StoreUnavailable, SyncLockHeld

from . import _metrics
from ._adapter import Adapter, Progress, adapter_class, check_adapter_environments, validate_adapter_config
from ._booking import IngestsEvents
from ._cloud_health import HealthBoard, failed_run_error, restored
from ._context import RunSettings, SyncStore
from ._errors import RunAborted
from ._handover import take_over
from ._model import Status, SyncOutcome
from ._names import learn_size_names
from ._pacing import max_concurrent
from ._run import run_sync
from ._runner import CloudsReadiness

log = logging.getLogger(__name__)


def _open_registered(entry: CloudEntry) -> Adapter:
    return adapter_class(entry.adapter)(entry)


class SyncService:
    """Runs syncs of the configured clouds."""

    def __init__(
        self,
        entries: Sequence[CloudEntry],
        *,
        store: SyncStore,
        pipeline: IngestsEvents,
        settings: RunSettings,
        open_adapter: Callable[[CloudEntry], Adapter] = _open_registered,
        max_concurrent: int | None = None,
    ) -> None:
        """``max_concurrent`` caps the runs in progress at once (None: no cap, for a one-shot sync)."""
        self._entries = {e.cloud: e for e in entries}
        self._slots = anyio.CapacityLimiter(max_concurrent) if max_concurrent is not None else None
        self._health = HealthBoard(self._entries)
        if max_concurrent is not None:
            _metrics.MAX_CONCURRENT.set(max_concurrent)
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
            settle_s=settings.reporting_sync_settle_s,
            budget_s=settings.reporting_sync_budget_s,
            lock_lease_s=settings.reporting_sync_lock_lease_s,
        )
        cap = max_concurrent(
            settings.reporting_sync_max_concurrent, settings.reporting_db_max_conns, len(entries)
        )
        log.info(
            "sync slots max_concurrent=%d clouds=%d db_max_conns=%d db_connections_at_most=%d",
            cap,
            len(entries),
            settings.reporting_db_max_conns,
            # The pool plus one dedicated lock connection per run in progress.
            settings.reporting_db_max_conns + cap,
        )
        if cap > settings.reporting_db_max_conns:
            log.warning(
                "TALLY_REPORTING_SYNC_MAX_CONCURRENT=%d is above TALLY_REPORTING_DB_MAX_CONNS=%d: "
                "runs will queue for connections, and the Reporting API behind them",
                cap,
                settings.reporting_db_max_conns,
            )
        return cls(entries, store=store, pipeline=pipeline, settings=run_settings, max_concurrent=cap)

    async def restore_last_completed(self) -> None:
        """Set each cloud's last-completed gauges from its newest completed row in ``sync_runs``, so
        that the stale-sync alert measures from the record, not from this process's start."""
        for cloud in sorted(self._entries):
            health = restored(await self._store.list_sync_runs(cloud))
            self._health.restore(cloud, health)
            if health.last_error_at is not None:
                _metrics.mark_error(cloud, health.last_error_at.timestamp())
            finished = health.last_completed_at
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
        """The "clouds" entry of /readyz (the daemon adapts it): always ready (one cloud's typo, or one
        cloud's outage, must not stop the others), with the refused entries and the failing clouds in
        its detail and every cloud's health beside it."""
        health = self._health.snapshot()
        clouds = {cloud: h.to_json() for cloud, h in health.items()}
        failing = [cloud for cloud, h in health.items() if h.failing]
        parts = [f"{len(self._entries)} cloud(s) configured"]
        if failing:
            parts.append(f"{len(failing)} failing: {', '.join(failing)}")
        if self._problems:
            detail = "; ".join(f"cloud {c}: {r}" for c, r in sorted(self._problems.items()))
            parts.append(f"adapter_config refused, runs of these clouds fail: {detail}")
        return CloudsReadiness(True, "; ".join(parts), clouds)

    @property
    def budget_s(self) -> float:
        """The budget each run of the service is given."""
        return self._settings.budget_s

    @property
    def lock_lease_s(self) -> float:
        """How long a hung holder keeps a cloud's sync lock (PostgreSQL's lease)."""
        return self._settings.lock_lease_s

    async def run_cloud(
        self, cloud: str, at: datetime | None = None, *, min_gap_s: float | None = None
    ) -> SyncOutcome:
        """Run one sync of ``cloud``; the outcome says completed, failed, lock held, not due (with
        ``min_gap_s``, a scheduled run's: see ``run_sync``) or unknown cloud."""
        entry = self._entries.get(cloud)
        if entry is None:
            return SyncOutcome(Status.UNKNOWN_CLOUD, cloud)
        outcome = await run_sync(
            entry,
            store=self._store,
            pipeline=self._pipeline,
            open_adapter=self._open_adapter,
            settings=self._settings,
            at=at,
            config_error=self._problems.get(cloud),
            slots=self._slots,
            min_gap_s=min_gap_s,
        )
        self._note(outcome)
        return outcome

    def _note(self, outcome: SyncOutcome) -> None:
        """Keep the cloud's health from a run's outcome (a held lock says nothing about the cloud)."""
        cloud, now = outcome.cloud, utc_now()
        if outcome.status is Status.COMPLETED and outcome.sync_run_id is not None:
            self._health.completed(cloud, outcome.sync_run_id, now)
        elif outcome.status is Status.FAILED:
            count = outcome.stats.get("error_count", 0)
            self._health.failed(cloud, outcome.sync_run_id, now, failed_run_error(int(count)))
            _metrics.mark_error(cloud, now.timestamp())
        elif outcome.status is Status.NOT_STARTED:
            self._health.failed(cloud, None, now, str(outcome.stats["errors"][0]))
            _metrics.mark_error(cloud, now.timestamp())

    async def learn_size_names(self, cloud: str) -> None:
        """Learn the cloud's size names outside any run (its scheduler does at start), within the run
        budget; a failure is logged and changes nothing, as in a run."""
        entry = self._entries[cloud]
        if cloud in self._problems:
            return
        reason: str | None = f"no answer within the sync budget of {self._settings.budget_s:g} s"
        with anyio.move_on_after(self._settings.budget_s):
            try:
                reason = await learn_size_names(self._open_adapter(entry), self._store, cloud, Progress())
            except (RunAborted, StoreUnavailable) as exc:
                reason = str(exc)
        if reason is not None:
            log.warning("size names not learnt at start cloud=%s reason=%s", cloud, reason)

    async def take_over(self, cloud: str) -> None:
        """Fail the rows of ``cloud`` a stopped holder left running, if its lock is free now (held:
        the holder is alive, or the next run that takes the lock does it)."""
        try:
            async with self._store.sync_lock(cloud):
                await take_over(self._store, cloud)
        except SyncLockHeld:
            pass
        except StoreUnavailable as exc:
            # The next replica start, or a run on request, takes over instead.
            log.warning("stale sync runs not checked cloud=%s reason=%s", cloud, exc)
