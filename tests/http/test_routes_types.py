"""``/api/v1/resource-types``: seeded schemas, a PUT that compiles first, and who may PUT."""

from __future__ import annotations

import pytest
from http_support import ADMIN, INGEST, READER, Api, event

pytestmark = pytest.mark.anyio

PATH = "/api/v1/resource-types/openstack/gateway"


async def test_seeded_types_are_listed(api: Api) -> None:
    listed = await (await api.get("/api/v1/resource-types", READER)).get_json()
    names = [(t["platform"], t["resource_type"]) for t in listed["items"]]
    assert ("openstack", "instance") in names and ("openstack", "loadbalancer") in names
    assert listed["next_cursor"] is None
    lb = await (await api.get("/api/v1/resource-types/openstack/loadbalancer", READER)).get_json()
    assert lb["size_schema"]["x-tally-seed"] == 6


async def test_put_then_ingest_uses_the_schema(api: Api) -> None:
    schema = {
        "type": "object",
        "required": ["ports"],
        "properties": {"ports": {"type": "integer", "minimum": 1}},
    }
    response = await api.client.put(PATH, headers=api.bearer(ADMIN), json={"size_schema": schema})
    assert response.status_code == 200
    assert (await response.get_json())["size_schema"] == schema
    answer = await (
        await api.post(
            "/api/v1/events", INGEST, json=event("gw-1", resource_type="gateway", size={"ports": 0})
        )
    ).get_json()
    assert answer["rejected"][0]["reason"].startswith("size_schema:")


@pytest.mark.parametrize(
    ("schema", "loc"),
    [
        ({"type": "objekt"}, "body.size_schema.type"),
        ({"properties": {"ports": {"pattern": "("}}}, "body.size_schema.properties.ports.pattern"),
        ({"$ref": "https://example.com/schema.json"}, "body.size_schema.$ref"),
    ],
)
async def test_schema_that_does_not_compile_is_400(api: Api, schema: object, loc: str) -> None:
    response = await api.client.put(PATH, headers=api.bearer(ADMIN), json={"size_schema": schema})
    assert response.status_code == 400
    problem = await response.get_json()
    assert problem["errors"][0]["loc"] == loc
    assert (await api.get(PATH, READER)).status_code == 404  # nothing stored


async def test_put_bad_bodies(api: Api) -> None:
    headers = api.bearer(ADMIN)
    response = await api.client.put(PATH, headers=headers, json={"size_schema": []})
    assert (await response.get_json())["errors"][0]["loc"] == "body.size_schema"
    response = await api.client.put(PATH, headers=headers, json={"size_schema": {}, "extra": 1})
    assert (await response.get_json())["errors"][0] == {"loc": "body.extra", "msg": "unknown member"}
    huge = {"size_schema": {"description": "x" * (300 * 1024)}}
    response = await api.client.put(PATH, headers=headers, json=huge)
    assert response.status_code == 413
    assert (await response.get_json())["type"] == "urn:tally:error:payload_too_large"


async def test_put_needs_an_admin_token(api: Api) -> None:
    response = await api.client.put(PATH, headers=api.bearer(READER), json={"size_schema": {}})
    assert response.status_code == 403
    assert (await response.get_json())["type"] == "urn:tally:error:forbidden"
