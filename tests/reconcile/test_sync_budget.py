"""The budget bounds a run, not its requests: a slow page or keystone waits, and a run cut off names every
listing."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from reconcile_support import T0, minutes, open_harness
from test_sync_failures import world_with_everything

from tally.openstack import _keystone, _listing
from tally.reconcile import Status
from tally.simulator.fakecloud import FakeCloudState
from tally.store import Store

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)]


async def test_a_budget_ending_mid_run_names_every_listing_still_running(
    store: Store, tmp_path: Path
) -> None:
    world, _ = world_with_everything()

    def slow_cinder_and_glance(state: FakeCloudState) -> None:
        state.faults.slow["block-storage"] = 8.0
        state.faults.slow["image"] = 8.0

    async with open_harness(world, store, tmp_path, prepare=slow_cinder_and_glance) as h:
        h.budget_s = 3.0
        outcome = await h.sync(T0 + minutes(60))
        assert outcome.status is Status.FAILED
        assert (await h.run_row(outcome))["stats"]["errors"] == [
            f"listing the resources of {h.cloud}: the run ended while enumerating {listing}: "
            "context deadline exceeded"
            for listing in ("volume", "image")
        ]


# Every fixed bound a request has, shrunk below the service's second: only a timeout taken from the
# budget waits for the answer (the real bounds, 10 s and 60 s, would take minutes to outlast). A listing's
# page and keystone's answer (the token, the catalog) are each waited for as long as the budget allows.
@pytest.mark.parametrize(
    ("service", "connect_bound", "budget_s"),
    [("image", _listing, 10.0), ("identity", _keystone, 15.0)],
)
async def test_a_slow_service_inside_the_budget_is_waited_for(
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    service: str,
    connect_bound: ModuleType,
    budget_s: float,
) -> None:
    world, _ = world_with_everything()

    def slow(state: FakeCloudState) -> None:
        state.faults.slow[service] = 1.0

    monkeypatch.setattr(connect_bound, "CONNECT_TIMEOUT_S", 0.3)
    monkeypatch.setattr(_listing, "UNBUDGETED_S", 0.3)
    async with open_harness(world, store, tmp_path, prepare=slow) as h:
        h.budget_s = budget_s
        outcome = await h.sync(T0 + minutes(60))
        assert outcome.status is Status.COMPLETED, (await h.run_row(outcome))["stats"]["errors"]
        assert "image" in outcome.stats["complete_types"]
