"""The listing pages as JSON objects equal ``to_wire`` of the same pages, on both backends.

PostgreSQL writes the instants itself (``_pg_pages``): the edge instants (year 1 and 9999, a fraction
of one microsecond, of trailing zeros, none) and a random sample must come out as ``format_instant``
writes them, and the pages must end where ``list_events``/``list_resources`` end theirs.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from tally.core import Event
from tally.store import EventFilter, ResourceFilter, Store

pytestmark = pytest.mark.anyio

EDGES = [
    datetime(1, 1, 1, tzinfo=UTC),
    datetime(999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(1000, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
    datetime(2026, 3, 1, 10, 0, 0, 100000, tzinfo=UTC),
    datetime(2026, 3, 1, 10, 0, 10, 120000, tzinfo=UTC),
    datetime(2026, 3, 1, 10, 0, 0, 10, tzinfo=UTC),
    datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
]


def _instants(count: int) -> list[datetime]:
    rng = random.Random(14)
    base = datetime(1, 1, 1, tzinfo=UTC)
    span = int((datetime(9999, 12, 31, tzinfo=UTC) - base).total_seconds())
    sample = [
        base + timedelta(seconds=rng.randrange(span), microseconds=rng.randrange(10**6)) for _ in range(count)
    ]
    return EDGES + sample


def _event(i: int, at: datetime, kind: str) -> Event:
    payload: dict[str, object] = {"state": "active", "n": i, "name": "Zoë"}
    if kind == "create":
        payload["size"] = {"vcpus": 1 + i % 3, "flavor": "m1.small"}
    return Event(
        event_id=f"ev-{i:04d}",
        timestamp=at,
        event_type=f"compute.instance.{kind}.end",
        platform="openstack",
        cloud="os-dev",
        resource_type="instance",
        resource_id=f"vm-{i // 2:04d}",
        project_id=f"p-{i % 4}",
        payload=payload if kind != "delete" else {},
    )


async def test_json_pages_equal_the_wire_objects_of_the_pages(store: Store) -> None:
    instants = _instants(120)
    # Two events per resource, in time order: a create, then an update or (every third) a delete.
    events = []
    for i in range(0, len(instants) - 1, 2):
        first, second = sorted(instants[i : i + 2])
        events.append(_event(i, first, "create"))
        events.append(_event(i + 1, second, "delete" if i % 3 == 0 else "update"))
    await store.write_batch(events, received_at=datetime(2026, 12, 1, 12, 0, 0, 123400, tzinfo=UTC))

    after, pages = None, 0
    while True:
        page = await store.list_events(EventFilter(), limit=37, after=after)
        as_json = await store.list_events_json(EventFilter(), limit=37, after=after)
        assert as_json.items == [stored.to_wire() for stored in page.items]
        assert as_json.next_key == page.next_key
        pages += 1
        if page.next_key is None:
            break
        after = page.next_key
    assert pages == 4

    for status in ("active", "deleted", "all"):
        filters = ResourceFilter(status=status)  # type: ignore[arg-type]
        rafter = None
        while True:
            rpage = await store.list_resources(filters, limit=9, after=rafter)
            rjson = await store.list_resources_json(filters, limit=9, after=rafter)
            assert rjson.items == [row.to_wire() for row in rpage.items]
            assert rjson.next_key == rpage.next_key
            if rpage.next_key is None:
                break
            rafter = rpage.next_key
