from __future__ import annotations

from pathlib import Path

import pytest
from reconcile_support import T0, builder, minutes, open_harness

from tally.reconcile import Status
from tally.store import Store

pytestmark = pytest.mark.anyio


async def test_first_sync_creates(store: Store, tmp_path: Path) -> None:
    b = builder()
    p = b.project("alpha")
    f = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    vt = b.volume_type("ssd")
    b.instance(p, f, created_at=T0 + minutes(5))
    b.volume(p, vt, size_gb=10, created_at=T0 + minutes(6))
    b.floating_ip(p, address="203.0.113.7", created_at=T0 + minutes(7))
    b.image(p, size_bytes=2**30, created_at=T0 + minutes(8))
    async with open_harness(b.build(), store, tmp_path) as h:
        outcome = await h.sync(T0 + minutes(60))
        row = await h.run_row(outcome)
        assert outcome.status is Status.COMPLETED, row
        assert outcome.stats["created"] == 4
