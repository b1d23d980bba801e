"""Servers deleted under nova's ``reclaim_instance_interval``: soft-deleted, then restored or reclaimed.

With a reclaim interval set, nova's delete only soft-deletes a server: it rests in vm_state
``soft-delete`` (listed only with ``deleted=true``), restorable by its owner, until nova's periodic
reclaim deletes it for good once ``deleted_at`` is older than the interval. The reclaim changes the
world and records the notifications nova sends, as the recorder's helpers do (the soft delete and the
restore are the recorder's); the workload gives every classic project servers whose deletes end each
of the three ways (restored, reclaimed inside the month, still restorable at its end).
"""

from __future__ import annotations

import random
from datetime import datetime

from .._streams import DAY, HOUR, jitter
from ._recorder import Handle, Recorder, Tenant
from ._workloads import CLASSIC_FLAVORS, Span

# The cloud's reclaim_instance_interval; the periodic task that reclaims runs on each compute host
# every so often, so a reclaim lands up to a tick after the interval has passed.
RECLAIM_INTERVAL = 2 * DAY
RECLAIM_TICK_S = (60, 600)
FATES = ("restored", "reclaimed", "restorable")


def _nova(rec: Recorder, vm: Handle, at: datetime, event_type: str, state: str, *task: str) -> None:
    rec.emit(at, event_type, "nova", vm.tenant, resource_id=vm.rid, state=state, host=vm.host, extra=task)


def reclaim(rec: Recorder, vm: Handle, at: datetime, rng: random.Random) -> datetime:
    """Nova's periodic reclaim: a plain delete of the soft-deleted server, at the instant it runs."""
    done = at + jitter(rng, 3, 15)
    vm.draft.change(at, transition="deleting")
    _nova(rec, vm, at, "compute.instance.delete.start", "soft-delete", "deleting")
    vm.draft.terminate(done)
    vm.alive = False
    _nova(rec, vm, done, "compute.instance.delete.end", "deleted")
    return done


def retention(rec: Recorder, tenant: Tenant, span: Span, rng: random.Random) -> None:
    """Three servers of a classic project deleted under the reclaim interval, one per fate."""
    profile = span.profile
    for n, fate in enumerate(FATES):
        at = profile.draw(rng, span.start, span.start + (span.end - span.start) / 3)
        host = rng.choice(("compute-01", "compute-02", "compute-03", "compute-04"))
        vm = rec.boot(
            tenant, rng.choice(CLASSIC_FLAVORS), at, f"{tenant.project.name}-keep-{n + 1}", host, rng
        )
        earliest = vm.draft.current.start + HOUR
        latest = span.last - DAY
        if fate == "reclaimed":
            latest -= RECLAIM_INTERVAL
        elif fate == "restorable":
            # Deleted less than the interval before the end: nova has not reclaimed it yet.
            earliest = max(earliest, span.end - RECLAIM_INTERVAL + HOUR)
            latest = span.last - HOUR
        if latest <= earliest:
            continue
        gone = rec.soft_delete(vm, profile.draw(rng, earliest, latest), rng)
        if fate == "restored":
            back = gone + jitter(rng, 3600, 36 * 3600)
            if span.ok(back):
                rec.restore(vm, back, rng)
        elif fate == "reclaimed":
            reclaim(rec, vm, gone + RECLAIM_INTERVAL + jitter(rng, *RECLAIM_TICK_S), rng)
