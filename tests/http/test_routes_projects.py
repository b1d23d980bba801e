"""``/api/v1/projects``: create, conflicts, relations over time, the cycle guard, the walk, the summary."""

from __future__ import annotations

from typing import Any

import pytest
from http_support import ADMIN, INGEST, READER, Api, event

pytestmark = pytest.mark.anyio


async def create(api: Api, external_id: str, *, platform: str = "openstack", cloud: str = "os-dev") -> Any:
    response = await api.post(
        "/api/v1/projects",
        json={"platform": platform, "cloud": cloud, "external_id": external_id, "name": external_id},
    )
    assert response.status_code == 201, await response.get_data()
    body = await response.get_json()
    assert response.headers["Location"] == f"/api/v1/projects/{body['id']}"
    return body


async def test_create_get_patch_list(api: Api) -> None:
    project = await create(api, "p-1")
    got = await (await api.get(f"/api/v1/projects/{project['id']}", READER)).get_json()
    assert got == project
    response = await api.client.patch(
        f"/api/v1/projects/{project['id']}",
        headers=api.bearer(ADMIN),
        json={"name": "Alpha", "metadata": {"k": 1}},
    )
    assert (await response.get_json())["name"] == "Alpha"
    listed = await (await api.get("/api/v1/projects?cloud=os-dev", READER)).get_json()
    assert [p["external_id"] for p in listed["items"]] == ["p-1"]


async def test_duplicate_virtual_rule_and_bad_ids(api: Api) -> None:
    await create(api, "p-1")
    dup = await api.post(
        "/api/v1/projects", json={"platform": "openstack", "cloud": "os-dev", "external_id": "p-1"}
    )
    assert dup.status_code == 409
    assert (await dup.get_json())["type"] == "urn:tally:error:conflict"
    virtual = await api.post(
        "/api/v1/projects", json={"platform": "meta", "cloud": "os-dev", "external_id": "x"}
    )
    assert virtual.status_code == 422
    assert (await virtual.get_json())["type"] == "urn:tally:error:validation"
    missing = await api.post("/api/v1/projects", json={"platform": "openstack"})
    assert sorted(e["loc"] for e in (await missing.get_json())["errors"]) == [
        "body.cloud",
        "body.external_id",
    ]
    nul = await api.post(
        "/api/v1/projects", json={"platform": "openstack", "cloud": "os-dev", "external_id": "a\x00"}
    )
    assert (await nul.get_json())["errors"] == [
        {"loc": "body.external_id", "msg": "must not contain a NUL character"}
    ]
    for bad in ("not-a-uuid", "00000000-0000-0000-0000-000000000000"):
        response = await api.get(f"/api/v1/projects/{bad}", READER)
        assert response.status_code == 404
    assert (await api.post("/api/v1/projects", READER, json={})).status_code == 403


async def test_relations_point_in_time_cycle_and_walk(api: Api) -> None:
    a, b, c = [await create(api, n) for n in ("a", "b", "c")]
    rel = await api.post(
        f"/api/v1/projects/{a['id']}/relations",
        json={
            "target_id": b["id"],
            "relation_type": "infrastructure_tenant",
            "valid_from": "2026-01-01T00:00:00Z",
        },
    )
    assert rel.status_code == 201
    ab = await rel.get_json()
    bc = await api.post(
        f"/api/v1/projects/{b['id']}/relations",
        json={
            "target_id": c["id"],
            "relation_type": "infrastructure_tenant",
            "valid_from": "2026-01-01T00:00:00Z",
        },
    )
    assert bc.status_code == 201
    cycle = await api.post(
        f"/api/v1/projects/{c['id']}/relations",
        json={"target_id": a["id"], "relation_type": "infrastructure_tenant"},
    )
    assert cycle.status_code == 422
    assert (await cycle.get_json())["type"] == "urn:tally:error:relation_cycle"
    dup = await api.post(
        f"/api/v1/projects/{a['id']}/relations",
        json={"target_id": b["id"], "relation_type": "infrastructure_tenant"},
    )
    assert dup.status_code in (409, 422)
    related = await (await api.get(f"/api/v1/projects/{a['id']}/related?depth=2", READER)).get_json()
    assert [(r["project"]["external_id"], r["depth"]) for r in related["items"]] == [("b", 1), ("c", 2)]
    shallow = await (await api.get(f"/api/v1/projects/{a['id']}/related?depth=1", READER)).get_json()
    assert [r["project"]["external_id"] for r in shallow["items"]] == ["b"]
    ended = await api.client.patch(
        f"/api/v1/projects/{a['id']}/relations/{ab['id']}",
        headers=api.bearer(ADMIN),
        json={"valid_to": "2026-02-01T00:00:00Z"},
    )
    assert (await ended.get_json())["valid_to"] == "2026-02-01T00:00:00Z"
    then = await (
        await api.get(f"/api/v1/projects/{a['id']}/relations?at=2026-01-15T00:00:00Z", READER)
    ).get_json()
    assert [r["id"] for r in then["items"]] == [ab["id"]]
    later = await (
        await api.get(f"/api/v1/projects/{a['id']}/relations?at=2026-03-01T00:00:00Z", READER)
    ).get_json()
    assert later["items"] == []
    gone = await api.client.delete(
        f"/api/v1/projects/{b['id']}/relations/{ab['id']}", headers=api.bearer(ADMIN)
    )
    assert gone.status_code == 200
    self_rel = await api.post(
        f"/api/v1/projects/{a['id']}/relations", json={"target_id": a["id"], "relation_type": "x"}
    )
    assert self_rel.status_code == 422
    bad_target = await api.post(
        f"/api/v1/projects/{a['id']}/relations", json={"target_id": "nope", "relation_type": "x"}
    )
    assert (await bad_target.get_json())["errors"][0]["loc"] == "body.target_id"


async def test_summary(api: Api) -> None:
    project = await create(api, "p-1")
    await api.post(
        "/api/v1/events",
        INGEST,
        json=[
            event("vm-1", timestamp="2026-03-01T10:00:00Z"),
            event(
                "vm-1", event_type="compute.instance.delete.end", timestamp="2026-03-01T11:30:00Z", state=None
            ),
            event("vm-2", timestamp="2026-03-01T12:00:00Z"),
        ],
    )
    path = f"/api/v1/projects/{project['id']}/summary?from=2026-03-01T00:00:00Z&to=2026-03-01T13:00:00Z"
    summary = await (await api.get(path, READER)).get_json()
    assert summary["items"] == [
        {"resource_type": "instance", "created": 2, "deleted": 1, "total_minutes": 150.0, "active_now": 1}
    ]


async def test_project_token_sees_only_its_projects(api: Api) -> None:
    from tally.store import hash_secret

    mine = await create(api, "p-1")
    other = await create(api, "p-2")
    await api.store.create_api_token(token_hash=hash_secret("mine"), role="project", project_ids=[mine["id"]])
    await api.post("/api/v1/events", INGEST, json=[event("vm-1"), event("vm-2", project_id="p-2")])
    listed = await (await api.get("/api/v1/resources", "mine")).get_json()
    assert [r["resource_id"] for r in listed["items"]] == ["vm-1"]
    assert (await api.get("/api/v1/resources?project_id=p-2", "mine")).status_code == 403
    assert (await api.get("/api/v1/resources/os-dev/instance/vm-2/lifecycle", "mine")).status_code == 404
    assert (await api.get("/api/v1/resources/os-dev/instance/vm-1/lifecycle", "mine")).status_code == 200
    assert (await api.get(f"/api/v1/projects/{other['id']}", "mine")).status_code == 404
    projects = await (await api.get("/api/v1/projects", "mine")).get_json()
    assert [p["id"] for p in projects["items"]] == [mine["id"]]
    assert (await api.get("/api/v1/rejected-events", "mine")).status_code == 403
