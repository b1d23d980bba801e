"""``GET /api/v1/stats/resources?at=``: the inventory as it stood at an instant, from the same fold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest
from http_support import INGEST, READER, Api, event
from hypothesis import given, settings
from hypothesis import strategies as st

from tally.core import format_instant, parse_event
from tally.http._inventory import resource_stats_at
from tally.store import ResourceFilter, open_store

LARGE = {"vcpus": 4, "ram_gb": 8, "disk_gb": 80, "flavor": "m1.large"}


async def ingest(api: Api, body: Any) -> None:
    response = await api.post("/api/v1/events", INGEST, json=body)
    assert response.status_code == 200 and (await response.get_json())["rejected"] == []


async def stats(api: Api, query: str) -> list[dict[str, Any]]:
    response = await api.get(f"/api/v1/stats/resources?{query}", READER)
    assert response.status_code == 200, await response.get_data()
    items: list[dict[str, Any]] = (await response.get_json())["items"]
    return items


@pytest.mark.anyio
async def test_counts_at_instants_of_a_day(api: Api) -> None:
    await ingest(
        api,
        [
            event("vm-1", timestamp="2026-03-01T10:00:00Z"),
            event(
                "vm-1",
                event_type="compute.instance.power_off.end",
                timestamp="2026-03-01T11:00:00Z",
                state="stopped",
            ),
            event(
                "vm-1", event_type="compute.instance.delete.end", timestamp="2026-03-01T12:00:00Z", state=None
            ),
            event("vm-2", timestamp="2026-03-01T11:30:00Z", project_id="p-2"),
            event(
                "vol-1",
                resource_type="volume",
                timestamp="2026-03-01T09:00:00Z",
                size={"size_gb": 10, "type": "ssd"},
            ),
        ],
    )
    assert await stats(api, "at=2026-03-01T08:59:59Z") == []
    assert await stats(api, "at=2026-03-01T10:00:00Z&group_by=state") == [
        {"cloud": "os-dev", "resource_type": "instance", "state": "active", "count": 1},
        {"cloud": "os-dev", "resource_type": "volume", "state": "active", "count": 1},
    ]
    assert await stats(api, "at=2026-03-01T11:45:00%2B01:00&group_by=state") == [  # 10:45Z
        {"cloud": "os-dev", "resource_type": "instance", "state": "active", "count": 1},
        {"cloud": "os-dev", "resource_type": "volume", "state": "active", "count": 1},
    ]
    assert await stats(api, "at=2026-03-01T11:45:00Z&group_by=state&group_by=project_id") == [
        {"cloud": "os-dev", "resource_type": "instance", "state": "active", "project_id": "p-2", "count": 1},
        {"cloud": "os-dev", "resource_type": "instance", "state": "stopped", "project_id": "p-1", "count": 1},
        {"cloud": "os-dev", "resource_type": "volume", "state": "active", "project_id": "p-1", "count": 1},
    ]
    # The delete counts from its own instant on; status and state filter the rows as they stood then.
    assert await stats(api, "at=2026-03-01T12:00:00Z&resource_type=instance") == [
        {"cloud": "os-dev", "resource_type": "instance", "count": 1}
    ]
    assert await stats(api, "at=2026-03-01T12:00:00Z&status=deleted") == [
        {"cloud": "os-dev", "resource_type": "instance", "count": 1}
    ]
    assert await stats(api, "at=2026-03-01T11:45:00Z&state=stopped&status=all") == [
        {"cloud": "os-dev", "resource_type": "instance", "count": 1}
    ]
    assert await stats(api, "at=2026-03-01T11:45:00Z&project_id=p-2") == [
        {"cloud": "os-dev", "resource_type": "instance", "count": 1}
    ]


@pytest.mark.anyio
async def test_a_late_instant_agrees_with_the_present(api: Api) -> None:
    await ingest(
        api,
        [
            event(f"vm-{i}", timestamp=f"2026-03-0{1 + i % 5}T10:00:00Z", project_id=f"p-{i % 3}")
            for i in range(12)
        ],
    )
    await ingest(
        api,
        [
            event(
                f"vm-{i}",
                event_type="compute.instance.delete.end",
                timestamp="2026-03-07T00:00:00Z",
                state=None,
            )
            for i in range(4)
        ],
    )
    for status in ("active", "deleted", "all"):
        query = f"group_by=project_id&group_by=state&status={status}"
        assert await stats(api, f"{query}&at=2030-01-01T00:00:00Z") == await stats(api, query)


@pytest.mark.anyio
async def test_a_bad_instant_is_a_400_naming_at(api: Api) -> None:
    response = await api.get("/api/v1/stats/resources?at=yesterday", READER)
    assert response.status_code == 400
    assert (await response.get_json())["errors"][0]["loc"] == "query.at"


# -- the property: counting at t from the whole history == counting the present of a store told only the
# -- events up to t (the incremental fold and the replay agree, whatever the arrival order) ------------

START = datetime(2026, 3, 1, tzinfo=UTC)
KINDS = ("compute.instance.create.end", "compute.instance.update", "compute.instance.delete.end")


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    items = []
    for n in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(KINDS))
        items.append(
            event(
                f"vm-{draw(st.integers(0, 4))}",
                event_type=kind,
                timestamp=format_instant(START + timedelta(minutes=draw(st.integers(0, 120)))),
                state=None if "delete" in kind else draw(st.sampled_from(["active", "stopped"])),
                project_id=draw(st.sampled_from(["p-1", "p-2"])),
                event_id=f"ev-{n}",
            )
        )
    return items


async def _compare(items: list[dict[str, Any]], at: datetime, group_by: list[str]) -> None:
    filters = ResourceFilter(status="all")
    async with open_store("sqlite:///:memory:") as whole, open_store("sqlite:///:memory:") as until:
        await whole.migrate_up()
        await until.migrate_up()
        events = [parse_event(i) for i in items]
        # Two arrivals in any order of time; the store told only the past gets the same arrivals (ties
        # of timestamp are ordered by arrival, so it must see them arrive in the same order).
        for chunk in (events[: len(events) // 2], events[len(events) // 2 :]):
            await whole.write_batch(chunk)
            await until.write_batch([e for e in chunk if e.timestamp <= at])
        expected = await until.resource_stats(group_by, filters=filters)
        assert await resource_stats_at(whole, group_by, at, filters) == expected


@settings(max_examples=40, deadline=None)
@given(
    items=histories(),
    minute=st.integers(-1, 121),
    group_by=st.sampled_from([["cloud", "resource_type"], ["cloud", "resource_type", "state", "project_id"]]),
)
def test_counts_at_t_equal_the_present_of_a_store_told_only_what_happened_by_t(
    items: list[dict[str, Any]], minute: int, group_by: list[str]
) -> None:
    anyio.run(_compare, items, START + timedelta(minutes=minute), group_by)
