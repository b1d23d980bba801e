"""Which lockstep syncs may be skipped: the instants the fake cloud's answers change, and the proof
that a sync between two of them books nothing (``sync_is_idle``). Pure.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from datetime import datetime

from tally.simulator.generator import Month


def change_instants(month: Month) -> list[datetime]:
    """Every instant the fake cloud's answers change: a resource's segment starts (its creation
    included) and its termination, sorted. Projects, flavors and volume types are fixed for the
    period, and a listing at an instant reads only the segment in effect, its start and the
    termination (``Resource.segment_at``, ``updated_at``, nova's deleted servers)."""
    found: set[datetime] = set()
    for r in month.world.resources:
        found.update(seg.start for seg in r.timeline)
        if r.terminated_at is not None:
            found.add(r.terminated_at)
    return sorted(found)


def sync_is_idle(
    changes: Sequence[datetime],
    last_completed: datetime | None,
    at: datetime,
    *,
    events_since: int,
    settle_s: int,
) -> bool:
    """Whether the lockstep sync at ``at`` may be skipped: it provably books nothing, and skipping it
    changes no later sync, so the store comes out event for event as with ``--every-sync``.

    Idle means: the sync just before ran and completed at ``last_completed``; no collector event was
    accepted since (``events_since`` is 0: the drain before each instant runs either way, so both
    runs ingest the same deliveries at the same instants); the recent window is off (``settle_s`` 0);
    and no change instant lies in the *closed* span ``[last_completed, at]``.

    Why a sync at ``at`` would book nothing. The diff is level-based: its inputs are the listings,
    the projection rows, the run's instant and the deleted-servers window. The listings of live
    resources at ``at`` are those at ``last_completed`` (no segment starts or ends in between). The
    rows are the rows ``last_completed``'s sync left: no event arrived since, and every sync in
    between (with ``--every-sync``) booked nothing, by this same argument. That sync completed, so
    it booked every correction it decided: a create leaves the row live with the listed state,
    project and size, an update leaves the listed facts, a delete leaves the row deleted, and none
    of them is decided again against the same listing. What it deferred, it deferred as
    transitional (with settle 0 nothing is recent), and the resource is listed in the same
    transition still. Nova's deleted servers inside the window of a sync at ``at`` (it opens no
    earlier than ``last_completed``) would have to end inside ``[last_completed, at]``: none does.
    A deletion dated exactly at ``last_completed`` is why the span is closed: a later window that
    opens there lists it again, and by then a held-back create may have made its row.

    Why no later sync changes. A skipped run leaves no correction (above) and no completed run, so
    the one thing it would have moved is the bound of the next run's deleted-servers window: the
    next sync ``S`` opens it at ``last_completed`` instead of at the skipped instant just before
    ``S``, clamped to 24 h before ``S`` either way. The two windows differ only by
    ``[last_completed, S - interval]``, where every instant was idle, so no server ended there and
    the two listings are the same. A poll-dated correction is dated at the instant of the run that
    books it; since a skipped instant books nothing, every correction is booked by the same run, at
    the same instant, in both modes.

    A failed sync (``last_completed`` None) is never followed by a skip: the next run retries what
    it left, and only completed runs move the bound.
    """
    if last_completed is None or events_since != 0 or settle_s != 0:
        return False
    return bisect.bisect_left(changes, last_completed) == bisect.bisect_right(changes, at)
