"""D4: what an ingest credential sends cannot grow /metrics. 2,000 novel event types, resource types,
states and HTTP methods add a constant number of series, counted under ``other``."""

from __future__ import annotations

import pytest
from http_support import INGEST, Api, event

from tally.ingest.internals import refresh_current_resources

pytestmark = pytest.mark.anyio


async def _series(api: Api) -> int:
    await refresh_current_resources(api.store)
    response = await api.client.get("/metrics")
    assert response.status_code == 200
    text = await response.get_data(as_text=True)
    return sum(1 for line in text.splitlines() if line and not line.startswith("#"))


def _novel(n: int) -> dict[str, object]:
    item = event(
        f"thing-{n}",
        event_type=f"novel{n}.thing.update",
        resource_type=f"novel_type_{n}",
        state=f"novel-state-{n}",
        size={"units": 1},
    )
    item["event_id"] = f"novel-{n}"
    return item


async def _send(api: Api, start: int, count: int) -> None:
    for first in range(start, start + count, 1000):
        items = [_novel(n) for n in range(first, min(first + 1000, start + count))]
        response = await api.post("/api/v1/events", INGEST, json=items)
        assert response.status_code == 200
        assert (await response.get_json())["accepted"] == len(items)
    for n in range(start, start + 50):
        await api.client.open("/api/v1/events", method=f"NOVEL{n}")


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
async def test_2000_novel_types_grow_the_exposition_by_a_constant(api: Api) -> None:
    await _send(api, 0, 10)  # the ``other`` series exist from here on
    await _series(api)  # and the scrape's own
    base = await _series(api)
    await _send(api, 10, 2000)
    after_2000 = await _series(api)
    await _send(api, 2010, 2000)
    assert await _series(api) == after_2000
    assert after_2000 == base  # the counts grew, not the series

    text = await (await api.client.get("/metrics")).get_data(as_text=True)
    assert 'event_type="other"' in text and 'resource_type="other"' in text
    assert 'state="other"' in text and 'method="other"' in text
    assert "novel" not in text
