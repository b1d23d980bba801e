"""Cinder's type listing against the fake over HTTP: more than one page of types, no next link, all read."""

from __future__ import annotations

from pathlib import Path

import pytest
from reconcile_support import T0, builder, minutes, open_harness

from tally.reconcile import Status
from tally.store import Store

pytestmark = pytest.mark.anyio

# Past cinder's osapi_max_limit (1000, the fake's cap too): a client that waits for a next link stops
# at the first page, and cinder never sends one for types.
TYPES = 2345


async def test_every_volume_type_past_the_first_page_is_named(store: Store, tmp_path: Path) -> None:
    b = builder()
    b.project("alpha")
    for n in range(TYPES):
        b.volume_type(f"tier-{n:04d}", is_public=n % 7 != 0)
    async with open_harness(b.build(), store, tmp_path) as h:
        outcome = await h.sync(T0 + minutes(60))
        assert outcome.status is Status.COMPLETED, outcome.stats
        names = await h.store.size_names(h.cloud)
        assert sorted(n.name for n in names) == [f"tier-{n:04d}" for n in range(TYPES)]
