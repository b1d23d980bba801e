"""Sync runs left ``running`` by a holder that stopped, failed by the next holder of the cloud's lock.

A run inserts its ``sync_runs`` row after it took its cloud's lock and records its end before it lets
the lock go, so while a caller holds the lock no other run of that cloud is under way: a row still
``running`` then belongs to a holder that died (SIGKILL, a lost host) and will never end it. Left
alone it would read as a run in progress for ever. ``fail_stale_sync_runs`` marks each such row
``failed``, with the reason as the only entry of its stats' ``errors``, and leaves ``completed_at``
NULL: when the holder stopped is not known, and a reader must not take the row for a run that ended
(the scheduler's "synced within the interval" rule counts only runs that did).

Only a holder of the cloud's lock may call it; ``tally.reconcile`` does, first thing after taking it.
"""

from __future__ import annotations

from datetime import datetime

from tally.core import format_instant

from ._seam import SqlSeam

_RUNNING = "SELECT id, stats FROM sync_runs WHERE cloud = ? AND status = 'running' ORDER BY started_at"
# status = 'running' again: a holder whose lock was lost (its connection) may have ended its row since.
_FAIL = "UPDATE sync_runs SET status = 'failed', stats = ? WHERE id = ? AND status = 'running'"


def stale_reason(run_id: str, found_at: datetime) -> str:
    """The error a stale row is failed with: which run, and why nobody will end it."""
    return (
        f"sync run {run_id} never ended: the replica that ran it stopped "
        f"(its lock was released without an end; found at {format_instant(found_at)})"
    )


async def fail_stale_sync_runs(store: SqlSeam, cloud: str, found_at: datetime) -> list[str]:
    """Fail every ``running`` row of ``cloud`` (see the module docstring); their ids, oldest first."""
    failed: list[str] = []
    async with store.tx() as tx:
        for run_id, stats in await tx.fetchall(_RUNNING, (cloud,)):
            document = dict(store.from_js(stats) or {})
            document.update(errors=[stale_reason(str(run_id), found_at)], error_count=1)
            if await tx.execute(_FAIL, (store.js(document), run_id)):
                failed.append(str(run_id))
    return failed
