"""The fast JSON provider writes the bytes Quart's default provider wrote, for any JSON-like answer."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from quart import Quart

from tally.http._json import FastJSONProvider, fast_json


def standard(value: Any) -> bytes:
    """What Quart's default provider answered (out of debug mode), less the newline."""
    return json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode()


texts = st.text(st.characters(codec="utf-8"), max_size=12)  # every code point but lone surrogates
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=600, deadline=None)
@given(documents)
def test_any_document_is_written_as_json_dumps_writes_it(value: Any) -> None:
    out = fast_json(value)
    assert (standard(value) if out is None else out) == standard(value)


@pytest.mark.parametrize("value", [1.192092896e-7, -1e16, 1.5e-05, [1e-7], {"a": 2e-5}])
def test_a_float_written_in_another_form_is_left_to_json_even_bare(value: Any) -> None:
    assert (fast_json(value) or standard(value)) == standard(value)


@pytest.mark.parametrize(
    "value",
    [
        {"é": "€", "smile": "\U0001f600", "del": "\x7f", "ctl": "\x00\x1f\n\t\b\f\r", "q": '"\\/'},
        {"b": 1, "a": [2.5, -0.0, 0.0001, 123456.789, 1e15], "c": {"z": None, "y": True}},
        {"name": "Zoë", "id": "0e5a7c1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e", "size": {"gb": 20}},
    ],
)
def test_plain_answers_take_the_fast_path(value: Any) -> None:
    assert fast_json(value) == standard(value)


@pytest.mark.parametrize(
    "value",
    [
        {"n": 10**40 + 1},  # past 64 bits: orjson refuses it
        {"f": 1e-7},  # repr writes 1e-07, orjson 1e-7
        {"f": 1e16},  # repr writes 1e+16, orjson 1e16
        {"f": [1, 1e300]},
        {"f": 0.00001},  # repr writes 1e-05, orjson 0.00001
        {1: "non-string key"},
        {"lone": "\ud800"},
        {"f": [-0.00001234]},
    ],
)
def test_what_orjson_would_write_otherwise_goes_to_the_standard_encoder(value: Any) -> None:
    assert fast_json(value) is None


@dataclass
class _Row:
    at: datetime
    ident: uuid.UUID


@pytest.mark.anyio
async def test_the_app_answers_the_default_providers_bytes() -> None:
    """Datetimes, dataclasses and UUIDs reach the provider's ``default`` as they did."""
    fast, default = Quart("fast"), Quart("default")
    fast.json = FastJSONProvider(fast)
    row = _Row(datetime(2026, 3, 1, 10, 0, tzinfo=UTC), uuid.UUID(int=7))
    answers = [{"row": row, "items": [1, "é", 1e-7], "id": uuid.UUID(int=9)}, [1, 2], {"é": "\U0001f600"}]
    for answer in answers:
        async with fast.app_context(), default.app_context():
            ours = await fast.json.response(answer).get_data()
            theirs = await default.json.response(answer).get_data()
        assert ours == theirs
        assert ours.endswith(b"\n")
