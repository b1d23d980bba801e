"""``/internal``: projection rebuild and the triggered sync of a cloud (internal token only).

The sync answer is held while the run works, at most the sync budget plus
15 s. The run is awaited in the request's task, so a client that goes away
cancels the request and with it the run (the runner records it failed).
"""

from __future__ import annotations

import logging
from typing import Any

import anyio

from tally.reconcile import SyncAlreadyRunning, SyncNotStarted, UnknownCloud

from ._contract import Call, Reply, Router
from ._models import RebuildAnswer, RebuildBody, SyncAnswer, SyncBody
from ._problems import Problem

router = Router("internal")
log = logging.getLogger(__name__)

HOLD_MARGIN_S = 15


@router.route(
    "POST",
    "/internal/projection/rebuild",
    summary="Replay current_resources from the events (optionally one cloud / resource type)",
    auth="internal",
    body=RebuildBody,
    replies=(Reply(200, "how many resource keys were replayed", RebuildAnswer),),
)
async def rebuild_projection(call: Call) -> Any:
    body: RebuildBody = call.body
    rebuilt = await call.services.store.rebuild_projection(cloud=body.cloud, resource_type=body.resource_type)
    log.info("projection rebuilt cloud=%s resource_type=%s keys=%d", body.cloud, body.resource_type, rebuilt)
    return {"rebuilt": rebuilt}


@router.route(
    "POST",
    "/internal/sync/{cloud}",
    summary="Run a sync of the cloud now and answer its outcome (held up to the budget + 15 s)",
    auth="internal",
    body=SyncBody,
    replies=(Reply(200, "the completed run", SyncAnswer),),
)
async def trigger_sync(call: Call) -> Any:
    body: SyncBody = call.body
    cloud = call.path["cloud"]
    settings = call.services.settings
    if body.at is not None and not settings.reporting_sync_allow_at:
        # Seed 001 fixes this answer word for word; it leaves no sync_runs row (no run starts).
        raise Problem(
            "validation", "this deployment does not take a sync instant; TALLY_REPORTING_SYNC_ALLOW_AT is off"
        )
    runner = call.services.sync_runner
    if runner is None:
        raise Problem("not_found", f"no cloud {cloud!r} is configured")
    hold = settings.reporting_sync_budget_s + HOLD_MARGIN_S
    try:
        with anyio.fail_after(hold):
            outcome = await runner.run(cloud, body.at)
    except UnknownCloud:
        raise Problem("not_found", f"no cloud {cloud!r} is configured") from None
    except SyncAlreadyRunning:
        raise Problem("conflict", "a sync for this cloud is already running") from None
    except SyncNotStarted as exc:
        # Our own wait (a sync slot, a pooled connection), no platform detail: the reason is the answer.
        raise Problem("unavailable", f"the sync did not start: {exc.reason}") from None
    except TimeoutError:
        log.error("sync answer not ready within hold cloud=%s hold_s=%d", cloud, hold)
        raise Problem("internal", "the sync run failed") from None
    if outcome.failed:
        log.warning("sync run failed cloud=%s sync_run_id=%s", cloud, outcome.sync_run_id)
        raise Problem("internal", "the sync run failed")
    stats = {k: int(outcome.stats.get(k, 0)) for k in ("created", "updated", "deleted")}
    return {"sync_run_id": outcome.sync_run_id, "stats": stats}
