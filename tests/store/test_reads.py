"""Reads of the Reporting API: events and resources with filters and keyset pages, stats, resource types."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tally.core import ResourceKey
from tally.store import EventFilter, ResourceFilter, RuleViolation, Store

pytestmark = pytest.mark.anyio


async def _fill(store: Store, make_event) -> None:
    events = []
    for i in range(5):
        events.append(
            make_event("compute.instance.create.end", f"2026-03-01T1{i}:00:00Z", resource_id=f"vm-{i}")
        )
    events.append(make_event("compute.instance.delete.end", "2026-03-02T10:00:00Z", resource_id="vm-0"))
    events.append(
        make_event(
            "volume.create.end",
            "2026-03-01T10:30:00Z",
            resource_type="volume",
            resource_id="vol-1",
            project_id="p-2",
            size={"size_gb": 10, "type": "ssd"},
            state="available",
        )
    )
    events.append(
        make_event("compute.instance.create.end", "2026-03-01T10:00:00Z", cloud="os-b", resource_id="x")
    )
    await store.write_batch(events)


async def test_events_are_paged_by_timestamp_and_id(store: Store, make_event) -> None:
    await _fill(store, make_event)
    seen = []
    after = None
    while True:
        page = await store.list_events(EventFilter(cloud="os-dev"), limit=3, after=after)
        seen.extend(page.items)
        if page.next_key is None:
            break
        after = page.next_key
    keys = [(s.event.timestamp, s.event.event_id) for s in seen]
    assert keys == sorted(keys) and len(keys) == 7
    assert all(s.event.cloud == "os-dev" for s in seen)


async def test_event_filters_and_half_open_window(store: Store, make_event) -> None:
    await _fill(store, make_event)
    window = EventFilter(start=datetime(2026, 3, 1, 10, tzinfo=UTC), end=datetime(2026, 3, 1, 12, tzinfo=UTC))
    page = await store.list_events(window, limit=100)
    assert sorted(s.event.resource_id for s in page.items) == ["vm-0", "vm-1", "vol-1", "x"]
    page = await store.list_events(EventFilter(event_type="compute.instance.delete.end"), limit=100)
    assert [s.event.resource_id for s in page.items] == ["vm-0"]
    page = await store.list_events(EventFilter(project_id="p-2", resource_type="volume", source="collector"))
    assert [s.event.resource_id for s in page.items] == ["vol-1"]
    assert page.items[0].received_at.tzinfo is not None


async def test_resources_by_status_and_key_pages(store: Store, make_event) -> None:
    await _fill(store, make_event)
    active = await store.list_resources(ResourceFilter(cloud="os-dev"), limit=100)
    assert [r.key.resource_id for r in active.items] == ["vm-1", "vm-2", "vm-3", "vm-4", "vol-1"]
    deleted = await store.list_resources(ResourceFilter(status="deleted"))
    assert [r.key.resource_id for r in deleted.items] == ["vm-0"]
    first = await store.list_resources(ResourceFilter(status="all"), limit=4)
    assert first.next_key == ResourceKey("os-dev", "instance", "vm-2")
    rest = await store.list_resources(ResourceFilter(status="all"), limit=10, after=first.next_key)
    assert [r.key.resource_id for r in rest.items] == ["vm-3", "vm-4", "vol-1"] and rest.next_key is None
    typed = await store.list_resources(
        ResourceFilter(resource_type="volume", state="available", project_id="p-2")
    )
    assert [r.key.resource_id for r in typed.items] == ["vol-1"]


async def test_resources_of_cloud_include_deleted(store: Store, make_event) -> None:
    await _fill(store, make_event)
    rows = await store.resources_of_cloud("os-dev")
    assert [r.key.resource_id for r in rows] == ["vm-0", "vm-1", "vm-2", "vm-3", "vm-4", "vol-1"]
    assert rows[0].deleted_at is not None


async def test_sync_rows_are_the_diffs_slice_of_the_projection(store: Store, make_event) -> None:
    await _fill(store, make_event)
    full = {r.key: r for r in await store.resources_of_cloud("os-dev")}
    instances = await store.sync_rows("os-dev", "instance")
    assert [r.resource_id for r in instances] == ["vm-0", "vm-1", "vm-2", "vm-3", "vm-4"]
    for slim in [*instances, *await store.sync_rows("os-dev", "volume")]:
        row = full[ResourceKey("os-dev", slim.resource_type, slim.resource_id)]
        assert (slim.project_id, slim.state, slim.last_event_at, slim.is_live) == (
            row.project_id,
            row.state,
            row.last_event_at,
            row.is_live,
        )
        assert (slim.created_at, slim.first_event_at) == (row.created_at, row.first_event_at)
        # A deleted row's size is never compared, so it is not read.
        assert slim.size == (row.size if row.is_live else None)
    assert instances[0].is_live is False and instances[0].last_event_at.tzinfo is not None
    # Equal sizes are parsed once.
    assert instances[1].size is instances[2].size
    assert await store.sync_rows("os-dev", "image") == []
    assert [r.resource_id for r in await store.sync_rows("os-b", "instance")] == ["x"]


async def test_history_is_in_fold_order_and_limited(store: Store, make_event) -> None:
    await _fill(store, make_event)
    key = ResourceKey("os-dev", "instance", "vm-0")
    history = await store.resource_history(key)
    assert [s.event.event_type for s in history] == [
        "compute.instance.create.end",
        "compute.instance.delete.end",
    ]
    assert len(await store.resource_history(key, limit=1)) == 1


async def test_resource_stats_grouped(store: Store, make_event) -> None:
    await _fill(store, make_event)
    stats = await store.resource_stats(["cloud", "resource_type"])
    assert stats == [
        {"cloud": "os-b", "resource_type": "instance", "count": 1},
        {"cloud": "os-dev", "resource_type": "instance", "count": 4},
        {"cloud": "os-dev", "resource_type": "volume", "count": 1},
    ]
    by_state = await store.resource_stats(
        ["cloud", "state"], filters=ResourceFilter(cloud="os-dev", status="all")
    )
    assert {(s["state"], s["count"]) for s in by_state} == {("active", 4), ("deleted", 1), ("available", 1)}
    with pytest.raises(RuleViolation, match="cannot group by 'payload'"):
        await store.resource_stats(["payload"])


async def test_event_stats_bucketed(store: Store, make_event) -> None:
    await _fill(store, make_event)
    start, end = datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 3, 3, tzinfo=UTC)
    daily = await store.event_stats(["cloud"], start=start, end=end, interval="1d")
    assert daily == [
        {"bucket": datetime(2026, 3, 1, tzinfo=UTC), "cloud": "os-b", "count": 1},
        {"bucket": datetime(2026, 3, 1, tzinfo=UTC), "cloud": "os-dev", "count": 6},
        {"bucket": datetime(2026, 3, 2, tzinfo=UTC), "cloud": "os-dev", "count": 1},
    ]
    hourly = await store.event_stats(
        ["cloud", "event_type"], start=start, end=end, interval="1h", filters=EventFilter(cloud="os-dev")
    )
    ten = [h for h in hourly if h["bucket"] == datetime(2026, 3, 1, 10, tzinfo=UTC)]
    assert {(h["event_type"], h["count"]) for h in ten} == {
        ("compute.instance.create.end", 1),
        ("volume.create.end", 1),
    }


async def test_current_resource_counts(store: Store, make_event) -> None:
    await _fill(store, make_event)
    counts = await store.current_resource_counts()
    assert ("openstack", "os-dev", "instance", "deleted", 1) in counts
    assert ("openstack", "os-dev", "instance", "active", 4) in counts


async def test_resource_types_put_get_list(store: Store) -> None:
    doc = {"type": "object", "required": ["gb"]}
    stored = await store.put_resource_type("garden", "bucket", doc)
    assert stored.size_schema == doc
    got = await store.get_resource_type("garden", "bucket")
    assert got is not None and got.size_schema == doc and got.updated_at.tzinfo is not None
    await store.put_resource_type("garden", "bucket", {"type": "object"})
    got = await store.get_resource_type("garden", "bucket")
    assert got is not None and got.size_schema == {"type": "object"}
    assert next(t.platform for t in await store.list_resource_types()) == "garden"
    assert await store.get_resource_type("garden", "nothing") is None
