"""Paced mode end to end: the small month of the lockstep test on a running clock, every fault on.

The syncs run at lockstep's instants while the notifications flow, each seeing the cloud and the
store at its instant. The lockstep run of this month passes, so a resource the paced run gets wrong
must be one the outbox's lag explains: a sync created it before the collector's own create reached
the store (seed 002's correction of what the collector has not posted yet).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tally.core import ResourceKey
from tally.simulation.simulate import SimulateOptions, simulate
from tally.simulator import parse_faults
from tally.store import open_store

pytestmark = pytest.mark.anyio

FAULTS = parse_faults(
    "missing-create,duplicates,reordering,refused-shapes,held-back,missing-delete,lost-update"
)


async def _created_by_a_sync_first(store_url: str, cloud: str, resource_type: str, resource_id: str) -> bool:
    async with open_store(store_url) as store:
        events = await store.lifecycle_events(ResourceKey(cloud, resource_type, resource_id))
    first = min(events, key=lambda e: e.received_at)
    return first.event.event_type == "sync.create" and any(
        e.event.source == "collector" and e.event.event_type.endswith("create.end") for e in events
    )


async def test_a_paced_small_month_syncs_at_lockstep_instants_and_only_the_outbox_lag_differs(
    tmp_path: Path,
) -> None:
    # Two days in 12 wall seconds: a sync costs more virtual time here than at the default factor.
    options = SimulateOptions(
        seed=1, period="2026-07", scale=0.3, days=2, faults=FAULTS, factor=14400.0, state_dir=tmp_path
    )
    result = await simulate(options)
    assert result.progress.failed_syncs == 0
    # One sync on every hour of the two days from their start (the deployment's first sync), then the
    # closing one at period_to.
    assert result.progress.syncs == 49
    assert result.progress.virtual_now == result.month.period_to
    assert result.progress.published == result.progress.total
    off = [r for r in result.comparison.resources if not r.tolerated]
    for r in off:
        assert await _created_by_a_sync_first(
            result.store_url, result.month.cloud, r.resource_type, r.resource_id
        ), (r.resource_type, r.resource_id)
