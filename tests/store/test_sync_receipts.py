"""What the absence pass reads to date a delete: a window of a cloud's runs, the newest receipt, and per
resource its first receipt and the runs that booked a correction for it; on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tally.core import ResourceKey, parse_event
from tally.store import Store, SyncReceipts

pytestmark = pytest.mark.anyio

T = datetime(2026, 7, 1, tzinfo=UTC)


def hours(n: float) -> datetime:
    return T + timedelta(hours=n)


async def test_sync_runs_between_answers_only_the_runs_strictly_inside_the_window(store: Store) -> None:
    ids = []
    for n in (1, 2, 3, 4):
        run_id = await store.start_sync_run("os-dev", hours(n))
        await store.finish_sync_run(run_id, "completed", {"complete_types": ["volume"]})
        ids.append(run_id)
    other = await store.start_sync_run("os-other", hours(2))
    between = await store.sync_runs_between("os-dev", hours(1), hours(4))
    assert [r["id"] for r in between] == ids[1:3]
    assert [r["started_at"] for r in between] == [hours(2), hours(3)]
    assert between[0]["stats"] == {"complete_types": ["volume"]} and between[0]["status"] == "completed"
    assert other not in {r["id"] for r in await store.sync_runs_between("os-dev", T, hours(9))}
    assert await store.sync_runs_between("os-dev", hours(4), hours(9)) == []
    page = await store.sync_runs_between("os-dev", T, hours(9), limit=3)
    assert [r["id"] for r in page] == ids[:3]


async def test_newest_receipt_is_the_latest_received_at_of_any_event(store: Store, make_event: Any) -> None:
    assert await store.newest_receipt() is None
    await store.write_batch([make_event("compute.instance.create.end")], received_at=hours(1))
    await store.write_batch([make_event(resource_id="vm-2", cloud="os-b")], received_at=hours(5))
    await store.write_batch([make_event(resource_id="vm-3")], received_at=hours(3))
    assert await store.newest_receipt() == hours(5)


async def test_sync_receipts_give_the_first_receipt_and_the_booking_runs_per_key(
    store: Store, make_event: Any
) -> None:
    vol = ResourceKey("os-dev", "volume", "vol-1")
    await store.write_batch(
        [make_event("volume.update.end", resource_type="volume", resource_id="vol-1")], received_at=hours(4)
    )
    wire = make_event(
        "sync.create",
        resource_type="volume",
        resource_id="vol-1",
        size={"size_gb": 1},
        provider={"reason": "missed create", "sync_run_id": "run-a"},
    ).to_wire()
    booked = parse_event({**wire, "source": "reconciliation"})
    await store.write_batch([booked], received_at=hours(2))
    await store.write_batch(
        [
            make_event(
                "volume.create.end",
                resource_type="volume",
                resource_id="vol-1",
                provider={"sync_run_id": "x"},
            )
        ],
        received_at=hours(6),
    )
    await store.write_batch(
        [make_event("volume.create.end", resource_type="volume", resource_id="vol-2")], received_at=hours(1)
    )
    missing = ResourceKey("os-dev", "volume", "vol-9")
    receipts = await store.sync_receipts([vol, missing, vol])
    assert receipts == {vol: SyncReceipts(hours(2), frozenset({"run-a"}))}


async def test_sync_receipts_of_many_keys_read_in_chunks(store: Store, make_event: Any) -> None:
    events = [make_event(resource_id=f"vm-{n:04d}") for n in range(700)]
    await store.write_batch(events, received_at=hours(1))
    keys = [ResourceKey("os-dev", "instance", f"vm-{n:04d}") for n in range(700)]
    receipts = await store.sync_receipts(keys)
    assert receipts.keys() == set(keys)
    assert {r.first_received_at for r in receipts.values()} == {hours(1)}
    assert all(not r.sync_run_ids for r in receipts.values())


async def test_late_keys_name_the_keys_received_after_an_instant_and_dated_before_another(
    store: Store, make_event: Any
) -> None:
    await store.write_batch(
        [make_event(resource_id="vm-early", at="2026-07-01T01:00:00Z")], received_at=hours(1)
    )
    late = [
        make_event(resource_id="vm-late", at="2026-07-01T02:00:00Z"),
        make_event(resource_id="vm-late", at="2026-07-01T03:00:00Z"),
        make_event(resource_id="vm-future", at="2026-07-01T09:00:00Z"),
        make_event(resource_id="vm-other", cloud="os-other", at="2026-07-01T02:00:00Z"),
        make_event(resource_id="vol-late", resource_type="volume", at="2026-07-01T02:00:00Z"),
    ]
    await store.write_batch(late, received_at=hours(8))
    keys = await store.late_keys("os-dev", hours(1), hours(5))
    assert keys == [
        ResourceKey("os-dev", "instance", "vm-late"),
        ResourceKey("os-dev", "volume", "vol-late"),
    ]
    assert await store.late_keys("os-dev", hours(8), hours(5)) == []
    but_updates = await store.late_keys(
        "os-dev", hours(1), hours(5), except_types=["compute.instance.update"]
    )
    assert but_updates == []
    await store.write_batch(
        [make_event("compute.instance.create.end", resource_id="vm-made", at="2026-07-01T02:00:00Z")],
        received_at=hours(9),
    )
    made = await store.late_keys("os-dev", hours(1), hours(5), except_types=["compute.instance.update"])
    assert made == [ResourceKey("os-dev", "instance", "vm-made")]


async def test_histories_give_every_event_of_each_key_in_fold_order(store: Store, make_event: Any) -> None:
    later = make_event(resource_id="vm-1", at="2026-07-01T03:00:00Z")
    earlier = make_event("compute.instance.create.end", resource_id="vm-1", at="2026-07-01T01:00:00Z")
    other = make_event(resource_id="vm-2", at="2026-07-01T02:00:00Z")
    await store.write_batch([later, other], received_at=hours(1))
    await store.write_batch([earlier], received_at=hours(2))
    many = [make_event(resource_id=f"vm-x{n:03d}") for n in range(250)]
    await store.write_batch(many, received_at=hours(3))
    one, two, missing = (ResourceKey("os-dev", "instance", i) for i in ("vm-1", "vm-2", "vm-9"))
    keys = [one, two, missing, one, *(e.key for e in many)]
    histories = await store.histories(keys)
    assert [s.event.event_id for s in histories[one]] == [earlier.event_id, later.event_id]
    assert [s.received_at for s in histories[one]] == [hours(2), hours(1)]
    assert [s.event.event_id for s in histories[two]] == [other.event_id]
    assert missing not in histories and len(histories) == 252
    assert histories[one] == await store.lifecycle_events(one)
