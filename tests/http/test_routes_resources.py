"""``/api/v1/resources`` and ``/api/v1/stats``: the projection, a history, a lifecycle, and counts."""

from __future__ import annotations

from typing import Any

import pytest
from http_support import INGEST, READER, Api, event

pytestmark = pytest.mark.anyio

LARGE = {"vcpus": 4, "ram_gb": 8, "disk_gb": 80, "flavor": "m1.large"}


async def ingest(api: Api, body: Any) -> None:
    response = await api.post("/api/v1/events", INGEST, json=body)
    assert response.status_code == 200
    assert (await response.get_json())["rejected"] == []


async def seed(api: Api) -> None:
    await ingest(
        api,
        [
            event("vm-1", timestamp="2026-03-01T10:00:00Z"),
            event(
                "vm-1", event_type="compute.instance.resize.end", timestamp="2026-03-01T12:00:00Z", size=LARGE
            ),
            event(
                "vm-1", event_type="compute.instance.delete.end", timestamp="2026-03-01T14:00:00Z", state=None
            ),
            event("vm-2", timestamp="2026-03-01T11:00:00Z", project_id="p-2"),
            event("vol-1", resource_type="volume", size={"size_gb": 10, "type": "ssd"}),
        ],
    )


async def test_list_by_status_in_key_order(api: Api) -> None:
    await seed(api)
    active = await (await api.get("/api/v1/resources", READER)).get_json()
    assert [(r["resource_type"], r["resource_id"]) for r in active["items"]] == [
        ("instance", "vm-2"),
        ("volume", "vol-1"),
    ]
    deleted = await (await api.get("/api/v1/resources?status=deleted", READER)).get_json()
    assert [r["resource_id"] for r in deleted["items"]] == ["vm-1"]
    row = deleted["items"][0]
    assert row["state"] == "deleted" and row["deleted_at"] == "2026-03-01T14:00:00Z"
    assert row["size"] == LARGE and row["first_event_at"] == "2026-03-01T10:00:00Z"
    paged = await (await api.get("/api/v1/resources?status=all&limit=2", READER)).get_json()
    assert len(paged["items"]) == 2 and paged["next_cursor"]
    rest = await (
        await api.get(f"/api/v1/resources?status=all&cursor={paged['next_cursor']}", READER)
    ).get_json()
    assert [r["resource_id"] for r in rest["items"]] == ["vol-1"] and rest["next_cursor"] is None


async def test_history_and_lifecycle(api: Api) -> None:
    await seed(api)
    history = await (await api.get("/api/v1/resources/os-dev/instance/vm-1/events", READER)).get_json()
    assert [e["event_type"] for e in history["items"]] == [
        "compute.instance.create.end",
        "compute.instance.resize.end",
        "compute.instance.delete.end",
    ]
    answer = await (await api.get("/api/v1/resources/os-dev/instance/vm-1/lifecycle", READER)).get_json()
    assert [(i["from"], i["to"], i["size"].get("flavor")) for i in answer["intervals"]] == [
        ("2026-03-01T10:00:00Z", "2026-03-01T12:00:00Z", "m1.medium"),
        ("2026-03-01T12:00:00Z", "2026-03-01T14:00:00Z", "m1.large"),
    ]
    assert answer["warnings"] == [] and answer["resource"]["resource_id"] == "vm-1"


async def test_lifecycle_warns_about_a_history_without_create(api: Api) -> None:
    await ingest(api, event("vm-9", event_type="compute.instance.update", timestamp="2026-03-02T00:00:00Z"))
    answer = await (await api.get("/api/v1/resources/os-dev/instance/vm-9/lifecycle", READER)).get_json()
    assert answer["warnings"] == ["history_starts_without_create"]
    assert answer["intervals"][0]["to"] is None


async def test_unknown_resource_is_404(api: Api) -> None:
    for suffix in ("events", "lifecycle"):
        response = await api.get(f"/api/v1/resources/os-dev/instance/nope/{suffix}", READER)
        assert response.status_code == 404
        assert (await response.get_json())["title"] == "Not found"


async def test_resource_stats(api: Api) -> None:
    await seed(api)
    stats = await (await api.get("/api/v1/stats/resources?group_by=project_id", READER)).get_json()
    assert stats["items"] == [
        {"cloud": "os-dev", "resource_type": "instance", "project_id": "p-2", "count": 1},
        {"cloud": "os-dev", "resource_type": "volume", "project_id": "p-1", "count": 1},
    ]
    response = await api.get("/api/v1/stats/resources?group_by=colour", READER)
    assert response.status_code == 400
    assert (await response.get_json())["errors"][0]["loc"].startswith("query.group_by")


async def test_event_stats(api: Api) -> None:
    await seed(api)
    path = (
        "/api/v1/stats/events?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z&interval=1d&group_by=source"
    )
    stats = await (await api.get(path, READER)).get_json()
    counts = {(i["event_type"], i["source"]): i["count"] for i in stats["items"]}
    assert counts[("compute.instance.create.end", "collector")] == 3
    assert all(i["bucket"] == "2026-03-01T00:00:00Z" for i in stats["items"])
    too_wide = await api.get("/api/v1/stats/events?from=2025-01-01T00:00:00Z&to=2026-03-01T00:00:00Z", READER)
    assert too_wide.status_code == 422
    assert (await too_wide.get_json())["errors"][0]["loc"] == "query.to"
    missing = await api.get("/api/v1/stats/events", READER)
    assert missing.status_code == 400
    assert sorted(e["loc"] for e in (await missing.get_json())["errors"]) == ["query.from", "query.to"]


async def test_history_over_the_limit_is_422(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    from tally.http import _routes_resources

    monkeypatch.setattr(_routes_resources, "MAX_HISTORY", 2)  # the real limit is 10,000 events
    await seed(api)
    for suffix in ("events", "lifecycle"):
        response = await api.get(f"/api/v1/resources/os-dev/instance/vm-1/{suffix}", READER)
        assert response.status_code == 422
        problem = await response.get_json()
        assert problem["type"] == "urn:tally:error:history_too_long"
        assert problem["title"] == "History too long"
