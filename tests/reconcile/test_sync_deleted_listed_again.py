"""A deleted server nova lists again: real nova touches a deleted server's row about two minutes after
the deletion (the fake does too), and changes-since reads ``updated``, so one deletion comes back in
the windows of the runs after the one that booked it. It is booked once, at terminated_at, whether the
bus saw the server's create (a reported delete) or nothing of it (a whole life), with or without the
recent window, over every run cadence that lists it several times."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from reconcile_support import T0, builder, collector_event, events_of, minutes, open_harness

from tally.core import parse_instant
from tally.reconcile import Status
from tally.simulator.fakecloud._nova import DELETED_CLEANUP
from tally.store import Store

pytestmark = pytest.mark.anyio

LAUNCHED = T0 + minutes(5)
GONE = T0 + minutes(90)


@pytest.mark.parametrize("seen_by_the_bus", [True, False], ids=["reported-delete", "whole-life"])
@pytest.mark.parametrize("settle_s", [0, 60])
@pytest.mark.parametrize("cadence_s", [45, 110])
async def test_a_deletion_listed_in_several_windows_is_booked_once(
    store: Store, tmp_path: Path, seen_by_the_bus: bool, settle_s: int, cadence_s: int
) -> None:
    b = builder()
    p = b.project("alpha")
    f = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    vm = b.instance(p, f, created_at=LAUNCHED).terminate(GONE).build()
    async with open_harness(b.build(), store, tmp_path, settle_s=settle_s) as h:
        if seen_by_the_bus:
            size = {"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"}
            create = collector_event(
                h,
                "instance",
                vm.resource_id,
                "compute.instance.create.end",
                LAUNCHED,
                project_id=p.id,
                size=size,
            )
            await h.pipeline.ingest([create])
        # A first run well before the deletion (it opens the bound), then runs every cadence until well
        # past the cleanup, each listing deleted servers from the run before it less the settle window.
        assert (await h.sync(T0 + minutes(60))).status is Status.COMPLETED
        at = GONE - timedelta(seconds=cadence_s // 2)
        listed_in = 0
        while at < GONE + DELETED_CLEANUP + timedelta(minutes=6):
            outcome = await h.sync(at)
            assert outcome.status is Status.COMPLETED, outcome.stats["errors"]
            listed_in += at >= GONE
            at += timedelta(seconds=cadence_s)
        assert listed_in >= 3
        deletes = [
            e for e in await events_of(h, "instance", vm.resource_id) if e["event_type"].endswith("delete")
        ]
        assert len(deletes) == 1, deletes
        assert parse_instant(deletes[0]["timestamp"]) == GONE
        creates = [e for e in await events_of(h, "instance", vm.resource_id) if "create" in e["event_type"]]
        assert len(creates) == 1
