"""``Store.usage_histories``: the scope's resources in key order, their events cut to the window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tally.core import ResourceKey, StoredEvent
from tally.store import Store, UsageScope

pytestmark = pytest.mark.anyio

MARCH = datetime(2026, 3, 1, tzinfo=UTC)
APRIL = datetime(2026, 4, 1, tzinfo=UTC)


async def read_all(store: Store, scope: UsageScope, limit: int = 2) -> dict[ResourceKey, list[StoredEvent]]:
    out: dict[ResourceKey, list[StoredEvent]] = {}
    after = None
    while True:
        page = await store.usage_histories(scope, limit=limit, after=after)
        for key, events in page.items:
            assert key not in out
            out[key] = events
        if page.next_key is None:
            return out
        after = page.next_key


async def test_scope_keys_in_order_with_events_before_the_end(store: Store, make_event) -> None:
    await store.write_batch(
        [
            make_event(
                "compute.instance.create.end", "2026-02-01T00:00:00Z", resource_id="vm-old", extra="x" * 500
            ),
            make_event(
                "compute.instance.update", "2026-03-05T00:00:00Z", resource_id="vm-old", state="shutoff"
            ),
            make_event("compute.instance.update", "2026-04-05T00:00:00Z", resource_id="vm-old"),
            # Deleted before the window: holds nothing in it.
            make_event("compute.instance.create.end", "2026-01-01T00:00:00Z", resource_id="vm-gone"),
            make_event("compute.instance.delete.end", "2026-01-02T00:00:00Z", resource_id="vm-gone"),
            # Born after the window.
            make_event("compute.instance.create.end", "2026-04-02T00:00:00Z", resource_id="vm-late"),
            make_event("compute.instance.create.end", "2026-03-02T00:00:00Z", resource_id="vm-a"),
            make_event(
                "compute.instance.create.end", "2026-03-02T00:00:00Z", resource_id="vm-b", cloud="os-b"
            ),
        ]
    )
    got = await read_all(store, UsageScope(MARCH, APRIL))
    assert [(k.cloud, k.resource_id) for k in got] == [
        ("os-b", "vm-b"),
        ("os-dev", "vm-a"),
        ("os-dev", "vm-old"),
    ]
    old = got[ResourceKey("os-dev", "instance", "vm-old")]
    assert [e.event.timestamp.month for e in old] == [2, 3]
    # The payload is cut to what the fold reads.
    assert dict(old[0].event.payload) == {
        "state": "active",
        "size": {"vcpus": 1, "ram_gb": 2, "disk_gb": 10, "flavor": "m1.small"},
    }
    assert dict(old[1].event.payload) == {"state": "shutoff"}
    only_b = await read_all(store, UsageScope(MARCH, APRIL, cloud="os-b"))
    assert list(only_b) == [ResourceKey("os-b", "instance", "vm-b")]


async def test_a_project_scope_keeps_a_resource_that_moved_away(store: Store, make_event) -> None:
    await store.write_batch(
        [
            make_event("compute.instance.create.end", "2026-03-01T00:00:00Z", resource_id="vm-1"),
            make_event(
                "compute.instance.update", "2026-03-10T00:00:00Z", resource_id="vm-1", project_id="p-2"
            ),
            make_event(
                "compute.instance.create.end", "2026-03-01T00:00:00Z", resource_id="vm-2", project_id="p-2"
            ),
        ]
    )
    got = await read_all(store, UsageScope(MARCH, APRIL, project_id="p-1"))
    assert list(got) == [ResourceKey("os-dev", "instance", "vm-1")]
    assert len(got[ResourceKey("os-dev", "instance", "vm-1")]) == 2


async def test_as_of_drops_later_receipts_and_keeps_a_row_deleted_since(store: Store, make_event) -> None:
    first = datetime(2026, 3, 1, 1, tzinfo=UTC)
    await store.write_batch(
        [make_event("compute.instance.create.end", "2026-02-01T00:00:00Z", resource_id="vm-1")],
        received_at=first,
    )
    # A delete dated before the window, received later: as of the first receipt the resource was alive.
    await store.write_batch(
        [make_event("compute.instance.delete.end", "2026-02-15T00:00:00Z", resource_id="vm-1")],
        received_at=first + timedelta(days=40),
    )
    assert await read_all(store, UsageScope(MARCH, APRIL)) == {}
    got = await read_all(store, UsageScope(MARCH, APRIL, as_of=first + timedelta(seconds=1)))
    [events] = got.values()
    assert [e.received_at for e in events] == [first]
