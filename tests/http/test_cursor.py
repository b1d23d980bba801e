"""Cursors are opaque round-trips of a sort key; a foreign or forged one is a 400 naming query.cursor."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest

from tally.core import ResourceKey
from tally.http._cursor import (
    decode_id_key,
    decode_resource_key,
    decode_time_key,
    encode_id_key,
    encode_resource_key,
    encode_time_key,
)
from tally.http._problems import Problem


def test_keys_round_trip() -> None:
    key = (datetime(2026, 3, 1, 10, 0, 0, 123456, tzinfo=UTC), "ev-1")
    assert decode_time_key("events", encode_time_key("events", key)) == key
    rkey = ResourceKey("os-dev", "instance", "vm/1")
    assert decode_resource_key(encode_resource_key(rkey)) == rkey
    assert decode_id_key("projects", encode_id_key("projects", "abc")) == "abc"
    assert encode_time_key("events", None) is None


@pytest.mark.parametrize(
    "cursor",
    [
        "not base64 !!",
        base64.urlsafe_b64encode(b"{}").decode(),
        base64.urlsafe_b64encode(b'["rejected","2026-03-01T10:00:00Z","x"]').decode(),
        base64.urlsafe_b64encode(b'["events","yesterday","x"]').decode(),
        "",
    ],
)
def test_forged_cursor_is_a_validation_problem(cursor: str) -> None:
    with pytest.raises(Problem) as caught:
        decode_time_key("events", cursor)
    body = caught.value.to_json()
    assert body["status"] == 400
    assert body["type"] == "urn:tally:error:validation"
    assert body["errors"][0]["loc"] == "query.cursor"
