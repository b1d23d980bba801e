"""Size-schema patterns over HTTP: a catastrophic one leaves ``/healthz`` fast; RE2-less ones are refused."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest
from http_support import ADMIN, INGEST, READER, Api, event, live_server

PATH = "/api/v1/resource-types/openstack/gateway"
CATASTROPHIC = {"type": "object", "properties": {"name": {"type": "string", "pattern": "^(a+)+$"}}}


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_catastrophic_pattern_does_not_stall_healthz(store_url: str) -> None:
    evil = event("gw-1", resource_type="gateway", size={"name": "a" * 30 + "!"})
    answers: list[httpx.Response] = []
    with live_server(store_url) as server, httpx.Client(base_url=server.base_url, timeout=5) as client:
        put = client.put(
            PATH, json={"size_schema": CATASTROPHIC}, headers={"Authorization": f"Bearer {ADMIN}"}
        )
        assert put.status_code == 200

        def send() -> None:
            with httpx.Client(base_url=server.base_url, timeout=5) as sender:
                answers.append(
                    sender.post("/api/v1/events", json=[evil], headers={"Authorization": f"Bearer {INGEST}"})
                )

        sender = threading.Thread(target=send)
        sender.start()
        time.sleep(0.05)
        started = time.perf_counter()
        health = client.get("/healthz", timeout=1)
        elapsed = time.perf_counter() - started
        sender.join(5)
        assert health.status_code == 200
        assert elapsed < 0.1
    assert answers[0].json()["rejected"][0]["reason"] == (
        f"size_schema: size.name: {'a' * 30 + '!'!r} does not match '^(a+)+$'"
    )


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("schema", "loc", "pattern"),
    [
        (
            {"properties": {"name": {"pattern": r"^(a)\1$"}}},
            "body.size_schema.properties.name.pattern",
            r"^(a)\1$",
        ),
        ({"patternProperties": {"^(?!x)": {}}}, "body.size_schema.patternProperties", "^(?!x)"),
    ],
)
async def test_pattern_re2_cannot_compile_is_refused_at_put(
    api: Api, schema: Any, loc: str, pattern: str
) -> None:
    response = await api.client.put(PATH, headers=api.bearer(ADMIN), json={"size_schema": schema})
    assert response.status_code == 400
    problem = await response.get_json()
    assert problem["errors"][0]["loc"] == loc
    assert problem["errors"][0]["msg"].startswith(f"pattern {pattern!r} is not supported by RE2")
    assert (await api.get(PATH, READER)).status_code == 404


@pytest.mark.anyio
async def test_ordinary_pattern_still_accepts_and_rejects(api: Api) -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": r"^gw-[0-9]+$"}}}
    response = await api.client.put(PATH, headers=api.bearer(ADMIN), json={"size_schema": schema})
    assert response.status_code == 200
    good = event("gw-1", resource_type="gateway", size={"name": "gw-12"})
    bad = event("gw-2", resource_type="gateway", size={"name": "gw-x"})
    answer = await (await api.post("/api/v1/events", INGEST, json=[good, bad])).get_json()
    assert answer["accepted"] == 1
    assert answer["rejected"][0]["reason"] == "size_schema: size.name: 'gw-x' does not match '^gw-[0-9]+$'"
