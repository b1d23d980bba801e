"""``/api/v1/events``: what an ingest client and a reader see, bad input included."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from http_support import ADMIN, INGEST, READER, Api, event

from tally.ingest.internals import MAX_EVENT_BYTES

pytestmark = pytest.mark.anyio


async def ingest(api: Api, body: Any) -> Any:
    response = await api.post("/api/v1/events", INGEST, json=body)
    assert response.status_code == 200, await response.get_data()
    return await response.get_json()


async def test_one_object_or_an_array(api: Api) -> None:
    assert await ingest(api, event("vm-1")) == {"accepted": 1, "duplicates": 0, "rejected": []}
    answer = await ingest(api, [event("vm-2"), event("vm-3"), event("vm-1")])
    assert answer == {"accepted": 2, "duplicates": 1, "rejected": []}


async def test_refused_items_say_why_by_member_and_the_rest_is_kept(api: Api) -> None:
    bad_nul = event("vm-nul")
    bad_nul["resource_id"] = "vm\x00nul"
    too_long = event("vm-long")
    too_long["project_id"] = "p" * 513
    unknown = event("vm-unknown")
    unknown["colour"] = "blue"
    reserved = event("vm-meta", cloud="meta")
    elsewhere = event("vm-other", cloud="os-other")
    items = [event("vm-ok"), bad_nul, too_long, unknown, reserved, "not an object", elsewhere]
    answer = await ingest(api, items)
    assert answer["accepted"] == 1
    reasons = {r["index"]: r["reason"] for r in answer["rejected"]}
    assert reasons[1].startswith("schema:") and "NUL" in reasons[1]
    assert reasons[2].startswith("schema: project_id")
    assert reasons[3] == "schema: unknown member colour"
    assert reasons[4] == "schema: cloud 'meta' is reserved for virtual projects"
    assert reasons[5].startswith("schema:")
    assert reasons[6] == "scope"
    listed = await (await api.get("/api/v1/events?resource_type=instance")).get_json()
    assert [e["resource_id"] for e in listed["items"]] == ["vm-ok"]
    rejected = await (await api.get("/api/v1/rejected-events")).get_json()
    assert len(rejected["items"]) == 5  # the scope violation is audited, not dead-lettered
    assert all(r["reason"].startswith("schema:") for r in rejected["items"])


async def test_size_that_breaks_the_registered_schema(api: Api) -> None:
    answer = await ingest(api, event("vm-1", size={"vcpus": 0, "ram_gb": 1, "disk_gb": 1, "flavor": "x"}))
    assert answer["accepted"] == 0
    assert answer["rejected"][0]["reason"].startswith("size_schema:")


async def test_type_without_schema_is_accepted_unless_required(api: Api, store: Any) -> None:
    from http_support import build_api

    answer = await ingest(api, event("gw-1", resource_type="gateway", size={"ports": 2}))
    assert answer["accepted"] == 1
    strict = await build_api(store, require_size_schema=True, seed=False)
    answer = await ingest(strict, event("gw-2", resource_type="gateway", size={"ports": 2}))
    assert answer["accepted"] == 0
    assert answer["rejected"][0]["reason"].startswith("size_schema:")


async def test_reused_event_id_with_another_timestamp_is_a_new_event(api: Api) -> None:
    first = event("vm-1", event_id="same-id")
    second = event(
        "vm-1", event_id="same-id", event_type="compute.instance.update", timestamp="2026-03-01T11:00:00Z"
    )
    assert (await ingest(api, [first, second]))["accepted"] == 2  # documented: not detected


async def test_not_json_is_400(api: Api) -> None:
    response = await api.client.post(
        "/api/v1/events", data=b"{not json", headers={"Authorization": f"Bearer {INGEST}"}
    )
    assert response.status_code == 400
    problem = await response.get_json()
    assert problem["type"] == "urn:tally:error:validation"
    assert problem["errors"][0]["loc"] == "body"


async def test_more_than_1000_is_413_and_nothing_is_stored(api: Api) -> None:
    batch = [event(f"vm-{i}") for i in range(1001)]
    response = await api.post("/api/v1/events", INGEST, json=batch)
    assert response.status_code == 413
    assert (await response.get_json())["type"] == "urn:tally:error:payload_too_large"
    listed = await (await api.get("/api/v1/events")).get_json()
    assert listed["items"] == []


async def test_ingest_needs_an_ingest_credential(api: Api) -> None:
    for secret in (ADMIN, "nope"):
        response = await api.post("/api/v1/events", secret, json=event())
        assert response.status_code == 401


async def test_listing_filters_and_pages_with_an_opaque_cursor(api: Api) -> None:
    batch = [event(f"vm-{i}", timestamp=f"2026-03-01T10:{i:02d}:00Z") for i in range(7)]
    batch.append(event("vol-1", resource_type="volume", size={"size_gb": 10, "type": "ssd"}))
    await ingest(api, batch)
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        path = "/api/v1/events?resource_type=instance&limit=3" + (f"&cursor={cursor}" if cursor else "")
        page = await (await api.get(path, READER)).get_json()
        seen += [e["resource_id"] for e in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [f"vm-{i}" for i in range(7)]
    assert pages == 3
    window = await (
        await api.get("/api/v1/events?from=2026-03-01T10:02:00Z&to=2026-03-01T10:04:00Z", READER)
    ).get_json()
    assert [e["resource_id"] for e in window["items"]] == ["vm-2", "vm-3"]
    assert all("received_at" in e for e in window["items"])


async def test_bad_query_names_the_parameter(api: Api) -> None:
    for query, loc in (
        ("limit=0", "query.limit"),
        ("limit=1001", "query.limit"),
        ("from=yesterday", "query.from"),
        ("colour=blue", "query.colour"),
        ("cursor=xyz", "query.cursor"),
        ("from=2026-03-01T10:00:00", "query.from"),
        ("cloud=a%00b", "query.cloud"),
        ("cloud=" + "x" * 513, "query.cloud"),
    ):
        response = await api.get(f"/api/v1/events?{query}")
        assert response.status_code == 400, query
        problem = await response.get_json()
        assert [e["loc"] for e in problem["errors"]] == [loc], query


async def test_an_instant_outside_the_calendar_in_utc_costs_only_its_item(api: Api) -> None:
    bad = event("vm-bad", timestamp="0001-01-01T00:00:00+01:00")
    answer = await ingest(api, [event("vm-ok"), bad])
    assert answer["accepted"] == 1
    assert [r["index"] for r in answer["rejected"]] == [1]
    assert answer["rejected"][0]["reason"].startswith("schema: timestamp")
    listed = await (await api.get("/api/v1/events")).get_json()
    assert [e["resource_id"] for e in listed["items"]] == ["vm-ok"]
    rejected = await (await api.get("/api/v1/rejected-events")).get_json()
    assert [r["reason"] for r in rejected["items"]] == [answer["rejected"][0]["reason"]]


async def test_an_integer_beyond_64_bits_is_refused_never_rounded(api: Api) -> None:
    body = b'[{"event_id":"big","timestamp":"2026-03-01T10:00:00Z","event_type":"compute.instance.update",'
    body += b'"platform":"openstack","cloud":"os-dev","resource_type":"instance","resource_id":"vm-1",'
    body += (
        b'"project_id":"p-1","payload":{"state":"active","count":10000000000000000000000000000000000000001}}]'
    )
    response = await api.client.post(
        "/api/v1/events",
        data=body,
        headers={"Authorization": f"Bearer {INGEST}", "Content-Type": "application/json"},
    )
    assert response.status_code == 200
    answer = await response.get_json()
    assert answer["accepted"] == 0
    assert answer["rejected"][0]["reason"] == (
        "schema: payload.count is an integer outside the signed 64-bit range"
    )


async def test_a_body_too_deep_to_read_its_long_numbers_exactly_is_400(api: Api) -> None:
    body = b"[" * 1000 + b"1234567890123456789" + b"]" * 1000
    response = await api.client.post(
        "/api/v1/events", data=body, headers={"Authorization": f"Bearer {INGEST}"}
    )
    assert response.status_code == 400
    assert (await response.get_json())["errors"][0]["loc"] == "body"


def _padded(resource_id: str, size: int) -> dict[str, Any]:
    """An event of exactly ``size`` bytes as compact JSON."""
    item = event(resource_id)
    item["payload"]["provider"] = {"note": ""}
    item["payload"]["provider"]["note"] = "x" * (size - len(orjson.dumps(item)))
    assert len(orjson.dumps(item)) == size
    return item


async def test_an_event_over_the_per_event_limit_costs_only_its_item(api: Api) -> None:
    at_limit = _padded("vm-at-limit", MAX_EVENT_BYTES)
    huge = _padded("vm-huge", 10 * 1024 * 1024)
    answer = await ingest(api, [event("vm-before"), huge, at_limit, event("vm-after")])
    assert answer["accepted"] == 3
    assert answer["rejected"] == [
        {
            "index": 1,
            "event_id": huge["event_id"],
            "reason": f"schema: the event is {10 * 1024 * 1024} bytes as JSON, "
            f"more than the {MAX_EVENT_BYTES} an event may hold",
        }
    ]
    [dead] = (await (await api.get("/api/v1/rejected-events")).get_json())["items"]
    assert dead["raw"] == {"not_stored": {"bytes": 10 * 1024 * 1024}}
    one_over = _padded("vm-one-over", MAX_EVENT_BYTES + 1)
    assert (await ingest(api, [one_over]))["rejected"][0]["index"] == 0
