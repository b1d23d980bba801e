"""Cursors are sealed round-trips of a sort key; an edited, foreign or forged one is a 400 on query.cursor."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

import pytest
from http_support import Api, build_api, event
from hypothesis import given, settings
from hypothesis import strategies as st

from tally.core import ResourceKey
from tally.http._cursor import CursorSeal
from tally.http._problems import Problem
from tally.store import open_store

SEAL = CursorSeal(b"k" * 32)
EVENT_KEY = (datetime(2026, 3, 1, 10, 0, 0, 123456, tzinfo=UTC), "ev-1")


def problem_of(seal: CursorSeal, cursor: str) -> dict[str, object]:
    with pytest.raises(Problem) as caught:
        seal.decode_time_key("events", cursor)
    return caught.value.to_json()


def test_keys_round_trip() -> None:
    assert SEAL.decode_time_key("events", SEAL.encode_time_key("events", EVENT_KEY)) == EVENT_KEY
    rkey = ResourceKey("os-dev", "instance", "vm/1")
    assert SEAL.decode_resource_key(SEAL.encode_resource_key(rkey)) == rkey
    assert SEAL.decode_id_key("projects", SEAL.encode_id_key("projects", "abc")) == "abc"
    assert SEAL.encode_time_key("events", None) is None


def edited(cursor: str, change: str) -> str:
    """The cursor with its sort key edited as a client could: decode, change the id, encode again."""
    body, _, tag = cursor.partition(".")
    key = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    key[-1] = change
    new_body = base64.urlsafe_b64encode(json.dumps(key).encode()).decode().rstrip("=")
    return f"{new_body}.{tag}"


def test_an_edited_sort_key_is_refused() -> None:
    cursor = SEAL.encode_time_key("events", EVENT_KEY)
    assert cursor is not None
    body = problem_of(SEAL, edited(cursor, "ev-0"))
    assert body["status"] == 400 and body["type"] == "urn:tally:error:validation"
    assert body["errors"] == [
        {"loc": "query.cursor", "msg": "not a cursor this API issued (cursors cannot be edited)"}
    ]


def test_a_cursor_of_another_deployment_is_refused() -> None:
    cursor = CursorSeal(b"x" * 32).encode_time_key("events", EVENT_KEY)
    assert cursor is not None and problem_of(SEAL, cursor)["status"] == 400


def test_a_cursor_of_another_listing_is_refused() -> None:
    cursor = SEAL.encode_time_key("rejected", EVENT_KEY)
    assert cursor is not None
    assert problem_of(SEAL, cursor)["errors"] == [
        {"loc": "query.cursor", "msg": "not a cursor of this listing (events)"}
    ]


@pytest.mark.parametrize(
    "cursor",
    [
        "not base64 !!",
        base64.urlsafe_b64encode(b"{}").decode(),
        base64.urlsafe_b64encode(b'["events","2026-03-01T10:00:00Z","x"]').decode(),
        "",
        ".",
        "e30.",
    ],
)
def test_forged_cursor_is_a_validation_problem(cursor: str) -> None:
    body = problem_of(SEAL, cursor)
    assert body["status"] == 400
    assert body["errors"][0]["loc"] == "query.cursor"  # type: ignore[index]


@settings(max_examples=300, deadline=None)
@given(
    stamp=st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)),
    ident=st.text(max_size=40),
    data=st.data(),
)
def test_any_byte_flipped_is_refused(stamp: datetime, ident: str, data: st.DataObject) -> None:
    cursor = SEAL.encode_time_key("events", (stamp, ident))
    assert cursor is not None
    raw = bytearray(cursor.encode("ascii"))
    index = data.draw(st.integers(0, len(raw) - 1), label="index")
    raw[index] ^= data.draw(st.integers(1, 255), label="mask")
    flipped = raw.decode("latin-1")
    assert problem_of(SEAL, flipped)["status"] == 400


@pytest.mark.anyio
async def test_an_edited_cursor_over_http_is_a_400_and_a_real_one_pages(api: Api) -> None:
    events = [event(f"vm-{i}", timestamp=f"2026-03-01T10:00:0{i}Z") for i in range(3)]
    assert (await api.post("/api/v1/events", "ingest-secret", json=events)).status_code == 200
    first = await (await api.get("/api/v1/events?limit=2")).get_json()
    cursor = first["next_cursor"]
    second = await api.get("/api/v1/events", query_string={"limit": 2, "cursor": cursor})
    assert [e["resource_id"] for e in (await second.get_json())["items"]] == ["vm-2"]
    refused = await api.get("/api/v1/events", query_string={"limit": 2, "cursor": edited(cursor, "a")})
    assert refused.status_code == 400
    assert (await refused.get_json())["errors"][0]["loc"] == "query.cursor"


@pytest.mark.anyio
async def test_a_cursor_from_one_replica_pages_on_another(api: Api, store_url: str) -> None:
    for i in range(3):
        await api.post(
            "/api/v1/events", "ingest-secret", json=[event(f"vm-{i}", timestamp=f"2026-03-01T10:0{i}:00Z")]
        )
    cursor = (await (await api.get("/api/v1/resources?limit=1")).get_json())["next_cursor"]
    async with open_store(store_url) as other_store:
        replica = await build_api(other_store, seed=False)
        page = await replica.get("/api/v1/resources", query_string={"limit": 1, "cursor": cursor})
        assert page.status_code == 200
        assert [r["resource_id"] for r in (await page.get_json())["items"]] == ["vm-1"]
