"""``/api/v1/usage``: the issue's known history, clipping, groups, cursors, CSV, scoping, as_of, errors."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from http_support import INGEST, READER, Api, event

from tally.core import ONE_MICROSECOND, format_instant, parse_instant
from tally.store import hash_secret

pytestmark = pytest.mark.anyio

DAY = "from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z"
SMALL = {"vcpus": 2, "ram_gb": 4, "disk_gb": 20, "flavor": "m1.small"}
LARGE = {"vcpus": 4, "ram_gb": 8, "disk_gb": 20, "flavor": "m1.large"}


def known_history() -> list[dict[str, Any]]:
    """An instance of 2 vCPU for 10 h resized to 4 vCPU for 10 h, and a 100 GB volume for 24 h."""
    return [
        event("vm-1", timestamp="2026-03-01T00:00:00Z", size=SMALL),
        event(
            "vm-1",
            event_type="compute.instance.resize.confirm.end",
            timestamp="2026-03-01T10:00:00Z",
            size=LARGE,
        ),
        event("vm-1", event_type="compute.instance.delete.end", timestamp="2026-03-01T20:00:00Z", state=None),
        event(
            "vol-1",
            resource_type="volume",
            event_type="volume.create.end",
            timestamp="2026-03-01T00:00:00Z",
            state="available",
            size={"size_gb": 100, "type": "ssd"},
        ),
    ]


async def post(api: Api, events: list[dict[str, Any]]) -> None:
    response = await api.post("/api/v1/events", INGEST, json=events)
    assert response.status_code in (200, 207), await response.get_data()
    body = await response.get_json()
    assert not body.get("rejected"), body


async def usage(api: Api, query: str, secret: str = READER) -> Any:
    response = await api.get(f"/api/v1/usage?{query}", secret)
    assert response.status_code == 200, await response.get_data()
    return await response.get_json()


def by_resource(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {i["resource_id"]: i for i in items}


async def test_known_history_reports_hours_vcpu_hours_and_gb_hours(api: Api) -> None:
    await post(api, known_history())
    answer = await usage(api, DAY)
    items = by_resource(answer["items"])
    vm, vol = items["vm-1"], items["vol-1"]
    assert vm["presence_s"] == str(20 * 3600)
    assert vm["quantities_s"]["vcpus"] == str(60 * 3600)
    assert vm["quantities_s"]["ram_gb"] == str(120 * 3600)
    assert (vm["creates"], vm["deletes"], vm["state"], vm["project_id"]) == (1, 1, "active", "p-1")
    assert vol["presence_s"] == str(24 * 3600)
    assert vol["quantities_s"] == {"size_gb": str(2400 * 3600)}
    assert (vol["creates"], vol["deletes"]) == (1, 0)
    assert vm["received_at"] is not None and answer["next_cursor"] is None


async def test_sub_window_is_clipped(api: Api) -> None:
    await post(api, known_history())
    items = by_resource((await usage(api, "from=2026-03-01T08:00:00Z&to=2026-03-01T12:00:00Z"))["items"])
    # 2 h at 2 vCPU then 2 h at 4 vCPU; neither the create nor the delete falls inside.
    assert items["vm-1"]["presence_s"] == str(4 * 3600)
    assert items["vm-1"]["quantities_s"]["vcpus"] == str(12 * 3600)
    assert (items["vm-1"]["creates"], items["vm-1"]["deletes"]) == (0, 0)
    assert items["vol-1"]["quantities_s"]["size_gb"] == str(400 * 3600)


async def test_states_and_projects_are_lines_of_their_own(api: Api) -> None:
    await post(
        api,
        [
            event("vm-1", timestamp="2026-03-01T00:00:00Z", size=SMALL),
            event(
                "vm-1",
                event_type="compute.instance.power_off.end",
                timestamp="2026-03-01T06:00:00Z",
                state="shutoff",
            ),
            event(
                "vm-1",
                event_type="compute.instance.update",
                timestamp="2026-03-01T12:00:00Z",
                state="shutoff",
                project_id="p-2",
            ),
        ],
    )
    items = (await usage(api, DAY))["items"]
    lines = {(i["project_id"], i["state"]): i["presence_s"] for i in items}
    assert lines == {("p-1", "active"): "21600", ("p-1", "shutoff"): "21600", ("p-2", "shutoff"): "43200"}
    mine = (await usage(api, DAY + "&project_id=p-2"))["items"]
    assert [(i["project_id"], i["presence_s"]) for i in mine] == [("p-2", "43200")]


async def test_group_by_flavor_and_volume_type(api: Api) -> None:
    await post(api, known_history())
    answer = await usage(api, DAY + "&group_by=project_id,flavor,volume_type")
    lines = {(i["resource_type"], i["flavor"], i["volume_type"]): i for i in answer["items"]}
    assert set(lines) == {
        ("instance", "m1.large", None),
        ("instance", "m1.small", None),
        ("volume", None, "ssd"),
    }
    assert lines[("instance", "m1.small", None)]["quantities_s"]["vcpus"] == str(20 * 3600)
    assert lines[("instance", "m1.large", None)]["quantities_s"]["vcpus"] == str(40 * 3600)
    assert lines[("volume", None, "ssd")]["presence_s"] == str(24 * 3600)
    assert answer["group_by"] == ["project_id", "flavor", "volume_type"]


async def test_cursors_page_resources_and_groups(api: Api) -> None:
    await post(api, [event(f"vm-{i}", timestamp="2026-03-01T00:00:00Z", size=SMALL) for i in range(5)])
    seen: list[str] = []
    query = DAY + "&limit=2"
    while True:
        page = await usage(api, query)
        seen += [i["resource_id"] for i in page["items"]]
        if page["next_cursor"] is None:
            break
        query = DAY + f"&limit=2&cursor={page['next_cursor']}"
    assert seen == [f"vm-{i}" for i in range(5)]
    first = await usage(api, DAY + "&group_by=flavor&limit=1")
    assert first["next_cursor"] is None and first["items"][0]["presence_s"] == str(5 * 86400)
    wrong = await api.get(f"/api/v1/usage?{DAY}&cursor={page['next_cursor'] or 'x'}", READER)
    assert wrong.status_code == 400


async def test_csv_streams_the_export(api: Api) -> None:
    await post(api, known_history())
    response = await api.client.get(
        f"/api/v1/usage?{DAY}", headers={**api.bearer(READER), "Accept": "text/csv"}
    )
    assert response.status_code == 200
    assert response.content_type.startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO((await response.get_data()).decode())))
    vm = next(r for r in rows if r["resource_id"] == "vm-1")
    assert (vm["presence_s"], vm["vcpus_s"], vm["size_gb_s"]) == ("72000", "216000", "")
    vol = next(r for r in rows if r["resource_id"] == "vol-1")
    assert vol["size_gb_s"] == "8640000"


async def test_csv_lines_are_the_json_items(api: Api) -> None:
    """The CSV (the stream and its fast fold) and the JSON pages (the lifecycle's fold) agree line by line."""
    moved = event("vm-2", event_type="compute.instance.update", timestamp="2026-03-01T06:00:00Z", size=None)
    moved["project_id"] = "p-2"
    off = event("vm-2", event_type="compute.instance.power_off.end", timestamp="2026-03-01T08:30:00.25Z")
    off["payload"] = {"state": "shutoff"}
    await post(
        api, [*known_history(), event("vm-2", timestamp="2026-02-01T00:00:00Z", size=SMALL), moved, off]
    )
    query = "from=2026-03-01T04:00:00Z&to=2026-03-01T21:00:00Z"
    items = (await usage(api, query + "&limit=1000"))["items"]
    response = await api.client.get(
        f"/api/v1/usage?{query}", headers={**api.bearer(READER), "Accept": "text/csv"}
    )
    rows = list(csv.DictReader(io.StringIO((await response.get_data()).decode())))
    assert len(rows) == len(items) == 5
    for row, item in zip(rows, items, strict=True):
        assert (row["resource_id"], row["project_id"], row["state"]) == (
            item["resource_id"],
            item["project_id"],
            item["state"],
        )
        assert row["presence_s"] == item["presence_s"]
        assert {m[:-2]: v for m, v in row.items() if m.endswith("_s") and v and m != "presence_s"} == item[
            "quantities_s"
        ]
        assert (int(row["creates"]), int(row["deletes"]), row["received_at"]) == (
            item["creates"],
            item["deletes"],
            item["received_at"],
        )


async def test_openapi_documents_the_csv_answer(api: Api) -> None:
    doc = await (await api.client.get("/openapi.json")).get_json()
    content = doc["paths"]["/api/v1/usage"]["get"]["responses"]["200"]["content"]
    assert set(content) == {"application/json", "text/csv"}
    assert content["text/csv"]["schema"]["type"] == "string"


async def test_project_token_sees_its_own_usage_only(api: Api) -> None:
    project = await api.store.create_project(platform="openstack", cloud="os-dev", external_id="p-1")
    await api.store.create_api_token(token_hash=hash_secret("mine"), role="project", project_ids=[project.id])
    await post(api, [event("vm-1", size=SMALL), event("vm-2", project_id="p-2", size=SMALL)])
    items = (await usage(api, DAY, "mine"))["items"]
    assert {i["resource_id"] for i in items} == {"vm-1"}
    assert (await api.get(f"/api/v1/usage?{DAY}&project_id=p-2", "mine")).status_code == 403


async def test_as_of_reproduces_an_earlier_answer(api: Api) -> None:
    await post(api, [event("vm-1", timestamp="2026-03-01T00:00:00Z", size=SMALL)])
    before = await usage(api, DAY)
    stamp = before["items"][0]["received_at"]
    # A late delete lands inside the closed window: the answer changes, and as_of gives the old one back.
    await post(
        api,
        [
            event(
                "vm-1", event_type="compute.instance.delete.end", timestamp="2026-03-01T12:00:00Z", state=None
            )
        ],
    )
    after = await usage(api, DAY)
    assert after["items"][0]["presence_s"] == "43200" and after["items"][0]["received_at"] > stamp
    as_of = format_instant(parse_instant(stamp) + ONE_MICROSECOND)
    again = await usage(api, DAY + f"&as_of={as_of}")
    assert again["items"][0]["presence_s"] == before["items"][0]["presence_s"] == "86400"


@pytest.mark.parametrize(
    ("query", "status", "loc"),
    [
        ("from=2026-03-01T00:00:00&to=2026-03-02T00:00:00Z", 400, "query.from"),
        ("from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z", 422, "query.to"),
        ("from=2025-01-01T00:00:00Z&to=2026-03-01T00:00:00Z", 422, "query.to"),
        (DAY + "&group_by=colour", 400, "query.group_by.0"),
        ("to=2026-03-01T00:00:00Z", 400, "query.from"),
    ],
)
async def test_bad_input_names_the_parameter(api: Api, query: str, status: int, loc: str) -> None:
    response = await api.get(f"/api/v1/usage?{query}", READER)
    assert response.status_code == status
    assert [e["loc"] for e in (await response.get_json())["errors"]] == [loc]


async def test_unservable_accept_is_406(api: Api) -> None:
    response = await api.client.get(
        f"/api/v1/usage?{DAY}", headers={**api.bearer(READER), "Accept": "image/png"}
    )
    assert response.status_code == 406
    assert (await response.get_json())["type"] == "urn:tally:error:not_acceptable"


async def test_project_summary_has_no_resource_cap_and_counts_a_moved_resource(api: Api) -> None:
    from tally.core import parse_event

    project = await api.store.create_project(platform="openstack", cloud="os-dev", external_id="p-1")
    created = [
        parse_event(event(f"vm-{i:05}", timestamp="2026-03-01T00:00:00Z", size=SMALL)) for i in range(10_001)
    ]
    for start in range(0, len(created), 2000):
        await api.store.write_batch(created[start : start + 2000])
    moved = event(
        "vm-00000", event_type="compute.instance.update", timestamp="2026-03-01T12:00:00Z", project_id="p-2"
    )
    await post(api, [moved])
    response = await api.get(f"/api/v1/projects/{project.id}/summary?{DAY}", READER)
    assert response.status_code == 200, await response.get_data()
    [item] = (await response.get_json())["items"]
    # 10,000 instances the whole day and the moved one its first 12 h in p-1.
    assert item == {
        "resource_type": "instance",
        "created": 10_001,
        "deleted": 0,
        "total_minutes": 10_000 * 1440 + 720,
        "active_now": 10_000,
    }
