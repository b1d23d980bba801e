"""The lean lane answers the two listings as Quart's path does, and reads them as the caller's token.

Every request here goes once through Quart (the app with its lane taken off) and once through the
lane, and the two answers must be equal: status, headers and the body's bytes. The requests are a
generated matrix (parameters, values, repeats, percent-escapes, cursors, tokens, request ids) over a
seeded store, on SQLite and on PostgreSQL; a remembered token must be refused the request after it
is revoked or expires, on a full page and on an empty one; and the numbers of stored documents must
come out as the standard encoder writes them, whichever way the page was checked.
"""

from __future__ import annotations

import json
import logging
import random
import re
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import anyio
import pytest
from http_support import ADMIN, INGEST, READER, Api, event, live_server

from tally.core import utc_now
from tally.http._app import OPERATIONS
from tally.http._principal import KnownTokens
from tally.store import EventFilter, Store, StoreUnavailable, dialect_of, hash_secret

pytestmark = pytest.mark.anyio

LISTINGS = {op.path: op for op in OPERATIONS if op.lean}
PROJECT_SECRET = "project-secret"
TWO_PROJECTS_SECRET = "two-projects-secret"
QUERY_NAMES = {
    "/api/v1/events": [
        "limit", "cursor", "cloud", "platform", "project_id", "resource_type", "event_type", "source",
        "from", "to",
    ],
    "/api/v1/resources": [
        "limit", "cursor", "cloud", "platform", "project_id", "resource_type", "state", "status",
    ],
}  # fmt: skip
ODD_NAMES = ["limitt", "", "cursor[]", "from_", "resource_id", "Limit"]
VALUES = [
    "", "0", "1", "2", "3", "100", "1000", "1001", "-1", "1.5", "abc", "os-dev", "os-other", "p-1", "p-2",
    "instance", "volume", "active", "deleted", "all", "shelved", "openstack", "collector", "reconcile",
    "compute.instance.create.end", "2026-03-01T10:00:00Z", "2026-03-01T10:00:00", "2026-13-01T00:00:00Z",
    "0001-01-01T00:00:00+01:00", "2026-03-01T10:00:00.1234567Z", "%ff", "%00", "a%2Cb", "p-1,p-2", "x" * 600,
    "é", "%C3%A9", "+", "%20", "\u2028",
]  # fmt: skip
SECRETS = [ADMIN, READER, PROJECT_SECRET, TWO_PROJECTS_SECRET, "unknown-secret", INGEST, None]
AUTH_ODDITIES = ["Basic abc", "Bearer ", "bearer " + READER, "Bearer  " + READER + " "]


def known(api: Api) -> KnownTokens:
    assert api.services is not None
    return api.services.known_tokens


async def seed(api: Api) -> None:
    items = [
        event(f"vm-{i}", timestamp=f"2026-03-01T10:{i:02d}:00Z", project_id=f"p-{1 + i % 2}")
        for i in range(7)
    ]
    items += [event("vm-1", event_type="compute.instance.delete.end", timestamp="2026-03-01T11:00:00Z")]
    answer = await api.post("/api/v1/events", INGEST, json=items)
    assert answer.status_code == 200 and (await answer.get_json())["rejected"] == []
    for pid in ("p-1", "p-2"):
        await api.store.create_project(platform="openstack", cloud="os-dev", external_id=pid)
    projects = {p.external_id: p.id for p in (await api.store.list_projects()).items}
    await api.store.create_api_token(
        token_hash=hash_secret(PROJECT_SECRET), role="project", project_ids=[projects["p-1"]]
    )
    await api.store.create_api_token(
        token_hash=hash_secret(TWO_PROJECTS_SECRET), role="project", project_ids=list(projects.values())
    )


async def answers(api: Api, path: str, headers: dict[str, str]) -> tuple[Any, Any]:
    """The answer of Quart's path, then the lane's, to the same request."""
    lane = api.app.lane  # type: ignore[attr-defined]
    api.app.lane = None  # type: ignore[attr-defined]
    try:
        by_quart = await api.client.get(path, headers=headers)
    finally:
        api.app.lane = lane  # type: ignore[attr-defined]
    return by_quart, await api.client.get(path, headers=headers)


def _headers(response: Any, given_id: str | None) -> list[tuple[str, str]]:
    out = sorted((name.lower(), value) for name, value in response.headers.items())
    if given_id is None:
        # A fresh id each time: both must have made one, of the same form.
        ids = [value for name, value in out if name == "x-request-id"]
        assert len(ids) == 1 and re.fullmatch("[0-9a-f]{32}", ids[0]), out
        out = [(name, "fresh" if name == "x-request-id" else value) for name, value in out]
    return out


async def assert_same(api: Api, path: str, headers: dict[str, str], given_id: str | None = None) -> Any:
    by_quart, by_lane = await answers(api, path, headers)
    request = f"GET {path} {headers}"
    assert by_lane.status_code == by_quart.status_code, request
    assert await by_lane.get_data() == await by_quart.get_data(), request
    assert _headers(by_lane, given_id) == _headers(by_quart, given_id), request
    return by_lane


def _query(rng: random.Random, path: str, cursors: list[str]) -> str:
    pairs = []
    for _ in range(rng.choice([0, 1, 1, 2, 3, 4])):
        name = rng.choice(QUERY_NAMES[path] if rng.random() < 0.85 else ODD_NAMES)
        value = rng.choice(cursors) if name == "cursor" and rng.random() < 0.6 else rng.choice(VALUES)
        if not value.isascii() or rng.random() < 0.3:
            value = quote(value, safe="")
        pairs.append(f"{name}={value}" if rng.random() < 0.95 else name)
    if pairs and rng.random() < 0.15:
        pairs.append(rng.choice(pairs))  # a member given twice
    return "&".join(pairs)


async def test_the_lane_answers_every_generated_request_as_quart_does(api: Api) -> None:
    await seed(api)
    cursors = []
    for path in LISTINGS:
        first = await (await api.get(f"{path}?limit=2", READER)).get_json()
        good = first["next_cursor"]
        flipped = good[:-1] + ("A" if good[-1] != "A" else "B")
        cursors += [good, flipped, good + "x", "", "not.a-cursor"]
    rng = random.Random(14)
    seen: dict[int, int] = {}
    for _ in range(300):
        path = rng.choice(list(LISTINGS))
        query = _query(rng, path, cursors)
        headers: dict[str, str] = {}
        secret = rng.choice(SECRETS)
        if secret is not None:
            headers["Authorization"] = f"Bearer {secret}"
        if rng.random() < 0.1:
            headers["Authorization"] = rng.choice(AUTH_ODDITIES)
        given_id = None
        if rng.random() < 0.3:
            headers["X-Request-ID"] = rng.choice(["req-1", "bad id", "a" * 201])
            given_id = headers["X-Request-ID"] if headers["X-Request-ID"] == "req-1" else None
        answer = await assert_same(api, f"{path}?{query}" if query else path, headers, given_id)
        seen[answer.status_code] = seen.get(answer.status_code, 0) + 1
    # The matrix reached pages, refusals of the query, of the caller and of its scope.
    assert {200, 400, 401, 403} <= set(seen), seen


async def test_a_page_walk_is_the_same_on_both_paths(api: Api) -> None:
    await seed(api)
    for path in LISTINGS:
        for secret in (READER, PROJECT_SECRET):
            target = f"{path}?limit=1"
            while True:
                answer = await assert_same(api, target, {"Authorization": f"Bearer {secret}"})
                assert answer.status_code == 200
                cursor = (await answer.get_json())["next_cursor"]
                if cursor is None:
                    break
                target = f"{path}?limit=1&cursor={cursor}"


async def test_a_store_away_and_an_unexpected_error_are_answered_alike(
    api: Api, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    await seed(api)

    async def away(*args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailable("connection lost")

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    headers = {"Authorization": f"Bearer {READER}", "X-Request-ID": "req-2"}
    for failure, status in ((away, 503), (broken, 500)):
        for method in ("list_events_json", "list_resources_json"):
            monkeypatch.setattr(api.store, method, failure)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="tally.http._app"):
            for path in LISTINGS:
                answer = await assert_same(api, path, headers, "req-2")
                assert answer.status_code == status
        lines = [r.getMessage() for r in caplog.records if r.name == "tally.http._app"]
        assert len(lines) == 2 * len(LISTINGS) and len(set(lines)) == len(LISTINGS), lines
        assert all("request_id=req-2" in line for line in lines)


@pytest.mark.parametrize("path", list(LISTINGS))
@pytest.mark.parametrize("page", ["full", "empty"])
async def test_a_remembered_token_is_refused_the_request_after_its_revocation(
    api: Api, path: str, page: str
) -> None:
    await seed(api)
    token = await api.store.create_api_token(token_hash=hash_secret("short-lived"), role="read_all")
    target = path if page == "full" else f"{path}?cloud=os-nowhere"
    first = await api.get(target, "short-lived")
    assert first.status_code == 200
    assert bool((await first.get_json())["items"]) == (page == "full")
    assert known(api).recall(hash_secret("short-lived")) is not None
    assert (await api.get(target, "short-lived")).status_code == 200  # answered from what it remembers
    await api.store.revoke_api_token(token.id)
    refused = await api.get(target, "short-lived")
    unknown = await api.get(target, "never-issued")
    assert refused.status_code == unknown.status_code == 401
    assert await refused.get_data() == await unknown.get_data()
    assert refused.headers["WWW-Authenticate"] == unknown.headers["WWW-Authenticate"]
    assert known(api).recall(hash_secret("short-lived")) is None


@pytest.mark.parametrize("path", list(LISTINGS))
async def test_a_remembered_token_is_refused_from_its_expiry_on(api: Api, path: str) -> None:
    await seed(api)
    expires = utc_now() + timedelta(seconds=0.6)
    await api.store.create_api_token(token_hash=hash_secret("soon"), role="admin", expires_at=expires)
    assert (await api.get(path, "soon")).status_code == 200
    assert (await api.get(path, "soon")).status_code == 200
    await anyio.sleep((expires - utc_now()).total_seconds() + 0.05)
    assert (await api.get(path, "soon")).status_code == 401


async def test_project_tokens_are_looked_up_every_time(api: Api) -> None:
    await seed(api)
    answer = await api.get("/api/v1/resources", PROJECT_SECRET)
    assert answer.status_code == 200
    assert {item["project_id"] for item in (await answer.get_json())["items"]} == {"p-1"}
    assert known(api).recall(hash_secret(PROJECT_SECRET)) is None


def standard(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode() + b"\n"


# Floats below 1e-4 or from 1e16, where json.dumps writes an exponent and orjson may not (1e-05 against
# 0.00001): a page holding one is never vouched for, and the answer's own scan decides. Beside them, floats
# and integers both write alike, which a page of PostgreSQL's vouches for, and the 64-bit edges (17 digits
# or more: not vouched for either, as a float of that length could not be).
TRICKY = [1e-5, 5e-05, 1.5e-7, 1e-300, 9.9e-05, 1e16, 1.5e16, 12345678901234567.0, 1.7976931348623157e308]
PLAIN = [0.1, 2.5, -3.75, 0.0001, 0.00012, 1e15, 123456.789, 2**53, 0, 7]
EDGES = [2**63 - 1, -(2**63)]


async def _numbers_page(api: Api, project: str) -> Any:
    return await assert_same(
        api, f"/api/v1/events?project_id={project}", {"Authorization": f"Bearer {READER}"}
    )


async def test_document_numbers_come_out_as_the_standard_encoder_writes_them(
    api: Api, store: Store, store_url: str
) -> None:
    values = [*TRICKY, *PLAIN, *EDGES]
    rng = random.Random(7)
    values += [rng.uniform(-1, 1) * 10.0 ** rng.randint(-12, 20) for _ in range(60)]
    items = []
    for i, value in enumerate(values):
        item = event(f"vm-n{i}", project_id=f"p-n{i}", timestamp=f"2026-03-01T10:00:{i % 60:02d}Z")
        item["payload"]["reading"] = value
        item["payload"]["readings"] = [value, {"v": value}]
        items.append(item)
    answer = await api.post("/api/v1/events", INGEST, json=items)
    assert (await answer.get_json())["rejected"] == []
    for i, value in enumerate(values):
        page = await store.list_events(EventFilter(project_id=f"p-n{i}"))
        expected = {"items": [stored.to_wire() for stored in page.items], "next_cursor": None}
        lane = await _numbers_page(api, f"p-n{i}")
        assert await lane.get_data() == standard(expected), value
        checked = await store.list_events_json(EventFilter(project_id=f"p-n{i}"))
        if value in TRICKY:
            assert not checked.numbers_plain, value  # the answer's own scan decides
        elif value in PLAIN and dialect_of(store_url) == "postgresql":
            assert checked.numbers_plain, value  # the page vouched: the fast path was taken


def test_the_lane_over_real_http_answers_as_quart_does(store_url: str) -> None:
    import httpx

    with live_server(store_url) as server:
        api = server.api
        headers = {"Authorization": f"Bearer {READER}", "X-Request-ID": "req-3"}
        for path in [*LISTINGS, "/api/v1/events?limit=abc", "/api/v1/resources?status=all&limit=1"]:
            api.app.lane, lane = None, api.app.lane  # type: ignore[attr-defined]
            try:
                by_quart = httpx.get(f"{server.base_url}{path}", headers=headers)
            finally:
                api.app.lane = lane  # type: ignore[attr-defined]
            by_lane = httpx.get(f"{server.base_url}{path}", headers=headers)
            assert (by_lane.status_code, by_lane.content) == (by_quart.status_code, by_quart.content)
            drop = {"date"}
            assert [(k, v) for k, v in by_lane.headers.items() if k not in drop] == [
                (k, v) for k, v in by_quart.headers.items() if k not in drop
            ]
