"""App-wide behaviour: problem documents for every error, X-Request-ID, auth modes, the 500 without detail."""

from __future__ import annotations

import logging

import pytest
from http_support import ADMIN, READER, Api, build_api

from tally.store import Store, StoreUnavailable

pytestmark = pytest.mark.anyio


async def test_unknown_route_and_method_are_problems(api: Api) -> None:
    response = await api.get("/api/v1/nothing-here")
    assert response.status_code == 404
    assert response.headers["Content-Type"] == "application/problem+json"
    assert (await response.get_json())["type"] == "urn:tally:error:not_found"
    response = await api.client.delete("/api/v1/events")
    assert response.status_code == 405
    assert set(response.headers["Allow"].split(", ")) >= {"GET", "POST"}
    assert (await response.get_json())["title"] == "Method not allowed"


async def test_request_id_is_kept_or_made(api: Api) -> None:
    response = await api.client.get("/api/v1/events", headers={"X-Request-ID": "abc-123"})
    assert response.status_code == 401
    assert response.headers["X-Request-ID"] == "abc-123"
    response = await api.client.get("/openapi.json")
    assert len(response.headers["X-Request-ID"]) == 32


async def test_missing_or_wrong_token_is_401(api: Api) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Token x"}):
        response = await api.client.get("/api/v1/resources", headers=headers)
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        assert (await response.get_json())["title"] == "Unauthorized"


async def test_auth_disabled_logs_a_warning_and_lets_callers_in(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="tally.http._app"):
        api = await build_api(store, reporting_auth_mode="disabled")
    assert any("auth disabled" in r.getMessage() for r in caplog.records)
    assert (await api.client.get("/api/v1/resources")).status_code == 200


async def test_a_failure_inside_is_500_without_detail_and_logged_with_the_request_id(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    api = await build_api(store)
    await store.aclose()  # the database goes away under the app
    with caplog.at_level(logging.ERROR, logger="tally.http._app"):
        response = await api.client.get(
            "/api/v1/resource-types", headers={**api.bearer(READER), "X-Request-ID": "req-500"}
        )
    assert response.status_code == 500
    assert await response.get_json() == {
        "type": "urn:tally:error:internal",
        "title": "Internal server error",
        "status": 500,
    }
    assert any("request_id=req-500" in r.getMessage() for r in caplog.records)


async def test_a_database_that_does_not_answer_is_503_with_retry_after_and_no_traceback(
    store: Store, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the PostgreSQL store raises while its server restarts or fails over (a lost session, no
    connection within the pool's wait): the client is told to try again, the log gets one line."""
    api = await build_api(store)

    async def away() -> None:
        raise StoreUnavailable("the database connection was lost: terminating connection")

    monkeypatch.setattr(store, "list_resource_types", away)
    with caplog.at_level(logging.WARNING, logger="tally.http._app"):
        response = await api.client.get(
            "/api/v1/resource-types", headers={**api.bearer(READER), "X-Request-ID": "req-503"}
        )
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "5"
    assert await response.get_json() == {
        "type": "urn:tally:error:unavailable",
        "title": "Service unavailable",
        "status": 503,
        "detail": "the database does not answer; nothing of this request was stored: try again",
    }
    [line] = [r for r in caplog.records if r.name == "tally.http._app"]
    assert line.levelno == logging.WARNING and line.exc_info is None
    assert "store unavailable request_id=req-503" in line.getMessage()


async def test_openapi_document_lists_every_route(api: Api) -> None:
    doc = await (await api.client.get("/openapi.json")).get_json()
    assert doc["openapi"].startswith("3.")
    rules = {(method.upper(), path) for path, item in doc["paths"].items() for method in item}
    expected = {
        ("POST", "/internal/projection/rebuild"),
        ("POST", "/internal/sync/{cloud}"),
        ("POST", "/api/v1/events"),
        ("GET", "/api/v1/events"),
        ("GET", "/api/v1/resources"),
        ("GET", "/api/v1/resources/{cloud}/{resource_type}/{resource_id}/events"),
        ("GET", "/api/v1/resources/{cloud}/{resource_type}/{resource_id}/lifecycle"),
        ("GET", "/api/v1/stats/resources"),
        ("GET", "/api/v1/stats/events"),
        ("GET", "/api/v1/resource-types"),
        ("GET", "/api/v1/resource-types/{platform}/{resource_type}"),
        ("PUT", "/api/v1/resource-types/{platform}/{resource_type}"),
        ("GET", "/api/v1/rejected-events"),
        ("GET", "/api/v1/sync-runs"),
        ("GET", "/api/v1/projects"),
        ("POST", "/api/v1/projects"),
        ("GET", "/api/v1/projects/{id}"),
        ("PATCH", "/api/v1/projects/{id}"),
        ("GET", "/api/v1/projects/{id}/summary"),
        ("GET", "/api/v1/projects/{id}/relations"),
        ("POST", "/api/v1/projects/{id}/relations"),
        ("PATCH", "/api/v1/projects/{id}/relations/{relation_id}"),
        ("DELETE", "/api/v1/projects/{id}/relations/{relation_id}"),
        ("GET", "/api/v1/projects/{id}/related"),
    }
    assert expected <= rules
    sync_body = doc["paths"]["/internal/sync/{cloud}"]["post"]["requestBody"]["content"]["application/json"]
    assert sync_body["schema"] == {"$ref": "#/components/schemas/SyncBody"}
    assert doc["components"]["schemas"]["SyncBody"]["properties"]["at"]["anyOf"][0]["format"] == "date-time"


async def test_a_body_is_documented_required_exactly_when_the_server_requires_one(api: Api) -> None:
    doc = await (await api.client.get("/openapi.json")).get_json()
    required = {
        f"{method.upper()} {path}": op["requestBody"]["required"]
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if "requestBody" in op
    }
    assert {k for k, v in required.items() if v} == {
        "POST /api/v1/events",
        "PUT /api/v1/resource-types/{platform}/{resource_type}",
        "POST /api/v1/projects",
        "POST /api/v1/projects/{id}/relations",
    }
    for label, is_required in required.items():
        method, path = label.split(" ", 1)
        if path.startswith("/internal/") or path == "/api/v1/events":
            continue  # the internal routes run on an empty body; an empty batch is a 400 (tested there)
        concrete = path.format(
            platform="openstack",
            resource_type="instance",
            id="00000000-0000-0000-0000-000000000001",
            relation_id="00000000-0000-0000-0000-000000000002",
        )
        answer = await api.client.open(concrete, method=method, headers=api.bearer(ADMIN))
        # Without a body: a required one is a 400 naming a member; an optional one gets past the check.
        assert (answer.status_code == 400) is is_required, (label, answer.status_code)


async def test_rebuild_replays_the_projection(api: Api) -> None:
    from http_support import INGEST, INTERNAL, event

    await api.post("/api/v1/events", INGEST, json=[event("vm-1"), event("vm-2")])
    response = await api.post("/internal/projection/rebuild", INTERNAL, json={"cloud": "os-dev"})
    assert response.status_code == 200
    assert await response.get_json() == {"rebuilt": 2}
    response = await api.post("/internal/projection/rebuild", INTERNAL, json={"clod": "os-dev"})
    assert (await response.get_json())["errors"][0]["loc"] == "body.clod"


async def test_answers_are_counted_by_route_template(api: Api) -> None:
    from prometheus_client import REGISTRY

    labels = {
        "route": "/api/v1/resources/<cloud>/<resource_type>/<resource_id>/events",
        "method": "GET",
        "status": "404",
    }
    before = REGISTRY.get_sample_value("tally_http_requests_total", labels) or 0.0
    for rid in ("a", "b"):
        assert (await api.get(f"/api/v1/resources/os-dev/instance/{rid}/events", READER)).status_code == 404
    assert REGISTRY.get_sample_value("tally_http_requests_total", labels) == before + 2


@pytest.mark.parametrize("body", [b"\x0b", b"\x0c", b" \x0b\n"])
async def test_a_body_of_non_json_whitespace_is_no_empty_body(api: Api, body: bytes) -> None:
    from http_support import INTERNAL

    headers = {**api.bearer(INTERNAL), "Content-Type": "application/json"}
    response = await api.client.post("/internal/projection/rebuild", data=body, headers=headers)
    assert response.status_code == 400
    assert (await response.get_json())["errors"][0]["loc"] == "body"
    blank = await api.client.post("/internal/projection/rebuild", data=b" \t\r\n", headers=headers)
    assert blank.status_code == 200  # JSON whitespace alone is an empty body: {}
