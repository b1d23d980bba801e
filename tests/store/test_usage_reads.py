"""``Store.usage_histories``: the scope's resources in key order, their events cut to the window; and
``Store.open_usage_stream``: the same histories, as facts, in one stream."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tally.core import ResourceKey, StoredEvent, UsageFact, usage_fact
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


async def stream_all(store: Store, scope: UsageScope, rows: int) -> list[tuple[ResourceKey, list[UsageFact]]]:
    out: list[tuple[ResourceKey, list[UsageFact]]] = []
    async with store.open_usage_stream(scope, rows=rows) as batches:
        async for batch in batches:
            assert batch, "a batch holds at least one whole history"
            out += batch
    return out


async def test_the_stream_reads_what_the_pages_read(store: Store, make_event) -> None:
    events = []
    for n in range(7):
        rid = f"vm-{n}"
        events.append(
            make_event("compute.instance.create.end", f"2026-02-0{n + 1}T00:00:00Z", resource_id=rid)
        )
        for day in range(n % 3):
            events.append(
                make_event(
                    "compute.instance.resize.confirm.end",
                    f"2026-03-1{day}T00:00:00Z",
                    resource_id=rid,
                    project_id="p-2" if n == 4 else "p-1",
                    size={"vcpus": 2 + day, "ram_gb": 0.5, "flavor": "m1.big"},
                )
            )
    events.append(make_event("compute.instance.delete.end", "2026-01-02T00:00:00Z", resource_id="vm-0"))
    await store.write_batch(events, received_at=MARCH + timedelta(days=20))
    # Received after the as_of of the last scope.
    await store.write_batch(
        [
            make_event(
                "compute.instance.create.end", "2026-03-02T00:00:00Z", resource_id="vm-x", cloud="os-b"
            ),
            make_event(
                "volume.create.end", "2026-03-03T00:00:00Z", resource_id="vol-1", resource_type="volume"
            ),
            make_event(
                "compute.instance.update", "2026-03-04T00:00:00Z", resource_id="vm-2", state="shutoff"
            ),
        ],
        received_at=APRIL + timedelta(days=10),
    )
    scopes = [
        UsageScope(MARCH, APRIL),
        UsageScope(MARCH, APRIL, cloud="os-dev"),
        UsageScope(MARCH, APRIL, cloud="os-dev", resource_type="instance"),
        UsageScope(MARCH, APRIL, project_id="p-2"),
        UsageScope(MARCH, datetime(2026, 3, 11, tzinfo=UTC), as_of=APRIL),
    ]
    for scope in scopes:
        paged = [(k, [usage_fact(e) for e in evs]) for k, evs in (await read_all(store, scope)).items()]
        assert paged, scope
        # One row per fetch, and two: histories of several events span fetches.
        for rows in (1, 2, 5000):
            assert await stream_all(store, scope, rows) == paged, (scope, rows)


async def test_pages_after_a_key_of_a_pinned_cloud_and_type(store: Store, make_event) -> None:
    await store.write_batch(
        [
            make_event("compute.instance.create.end", "2026-03-02T00:00:00Z", resource_id=f"vm-{n}")
            for n in range(5)
        ]
    )
    scope = UsageScope(MARCH, APRIL, cloud="os-dev", resource_type="instance")
    got = await read_all(store, scope, limit=2)
    assert [k.resource_id for k in got] == [f"vm-{n}" for n in range(5)]
