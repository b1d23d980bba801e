"""``/api/v1/sync-runs``: a cloud's reconciliation runs (admin), oldest told instant first.

Each run as its ``sync_runs`` row holds it: the told ``started_at``, ``completed_at``, the status
and the stats document (counts, errors, ``deferred_resources``, ``complete_types``). It is what a
strict ``tally simulator compare`` judges poll-dated corrections by; ``from``/``to`` bound
``started_at`` (half-open).
"""

from __future__ import annotations

from typing import Any

from tally.core import format_instant

from ._contract import Call, Reply, Router
from ._models import SyncRunsAnswer, SyncRunsQuery

router = Router("sync-runs")


def _run_json(run: dict[str, Any]) -> dict[str, Any]:
    completed = run.get("completed_at")
    return {
        "id": run["id"],
        "cloud": run["cloud"],
        "started_at": format_instant(run["started_at"]),
        "completed_at": format_instant(completed) if completed is not None else None,
        "status": run["status"],
        "stats": dict(run.get("stats") or {}),
    }


@router.route(
    "GET",
    "/api/v1/sync-runs",
    summary="A cloud's sync runs, oldest started_at first, with their stats (admin)",
    auth="admin",
    query=SyncRunsQuery,
    replies=(Reply(200, "every run of the cloud inside the bounds", SyncRunsAnswer),),
)
async def list_sync_runs(call: Call) -> Any:
    q: SyncRunsQuery = call.query
    runs = await call.services.store.list_sync_runs(q.cloud)
    return {
        "items": [
            _run_json(r)
            for r in runs
            if (q.from_ is None or r["started_at"] >= q.from_) and (q.to is None or r["started_at"] < q.to)
        ]
    }
