"""Decoding bodies: both envelope versions, and every kind of bad input as a value, never an exception."""

from __future__ import annotations

import json
from decimal import Decimal
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tally.collector import Skipped, _decode, map_notification
from tally.collector.internals import MAX_BODY_BYTES, Decoded, Unparseable, decode_body

INNER = {
    "message_id": "m-1",
    "event_type": "volume.create.end",
    "timestamp": "2026-03-01 10:00:00",
    "payload": {"volume_id": "v", "tenant_id": "t", "size": 1.5},
    "_context_project_id": "p",
}


def test_v2_envelope_decodes_the_inner_string_with_exact_numbers() -> None:
    body = json.dumps({"oslo.version": "2.0", "oslo.message": json.dumps(INNER)}).encode()
    outcome = decode_body(body)
    assert isinstance(outcome, Decoded)
    assert outcome.notification.payload["size"] == Decimal("1.5")
    assert outcome.notification.context_owner == "p"


@pytest.mark.parametrize("as_text", [False, True])
def test_v1_bare_message_keeps_exact_numbers_too(as_text: bool) -> None:
    inner = dict(INNER, payload={**INNER["payload"], "size": "SIZE", "big": 2**70})
    text = json.dumps(inner).replace('"SIZE"', "0.10000000000000000001")
    outcome = decode_body(text if as_text else text.encode())
    assert isinstance(outcome, Decoded)
    assert outcome.notification.payload["size"] == Decimal("0.10000000000000000001")
    assert outcome.notification.payload["big"] == 2**70


def test_v2_inner_message_with_integers_beyond_64_bits_decodes() -> None:
    inner = dict(INNER, payload={**INNER["payload"], "big": 2**70})
    outcome = decode_body(json.dumps({"oslo.version": "2.0", "oslo.message": json.dumps(inner)}).encode())
    assert isinstance(outcome, Decoded)
    assert outcome.notification.payload["big"] == 2**70


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"oslo.version": "2.0", "oslo.message": "{\\"message_id\\": ', "json"),
        (b'{"oslo.version": "2.0", "oslo.mess', "json"),
        (b'{"a": "\xc3\x28"}', "encoding"),
        (b"[1, 2, 3]", "envelope"),
        (b'{"oslo.version": "2.0", "oslo.message": {"event_type": "x"}}', "envelope"),
        (b'{"oslo.version": "2.0"}', "envelope"),
        (json.dumps({"oslo.version": "2.0", "oslo.message": "[1]"}).encode(), "envelope"),
        (json.dumps({**INNER, "event_type": None}).encode(), "event_type"),
        (json.dumps({**INNER, "timestamp": "soon"}).encode(), "timestamp"),
    ],
)
def test_bad_bodies_are_unparseable_with_a_reason(body: bytes, reason: str) -> None:
    outcome = decode_body(body)
    assert isinstance(outcome, Unparseable)
    assert outcome.reason == reason
    assert outcome.detail


def test_body_over_one_mib_is_unparseable() -> None:
    padded = dict(INNER, payload={"pad": "x" * MAX_BODY_BYTES})
    outcome = decode_body(json.dumps(padded).encode())
    assert isinstance(outcome, Unparseable) and outcome.reason == "oversized"


def test_versioned_nova_notification_is_skipped() -> None:
    body = dict(INNER, event_type="instance.create.end", payload={"nova_object.data": {"uuid": "u"}})
    outcome = decode_body(json.dumps(body).encode())
    assert isinstance(outcome, Skipped) and outcome.reason == "versioned"


@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(body: bytes) -> None:
    map_notification(body, cloud="c")


@settings(max_examples=60)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda c: st.lists(c) | st.dictionaries(st.text(max_size=8), c),
    )
)
def test_arbitrary_json_never_raises(value: object) -> None:
    map_notification(json.dumps(value), cloud="c")
    map_notification(json.dumps({"oslo.version": "2.0", "oslo.message": json.dumps(value)}), cloud="c")
    if isinstance(value, dict):
        map_notification(json.dumps(dict(INNER, payload=value)), cloud="c")


_NUMBER_TEXTS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(
        [
            "0.1",
            "1.50",
            "2.0",
            "1e2",
            "1E-3",
            "0.30000000000000004",
            "100.000",
            "-0.0",
            "7.25",
            "1024.00000000000000000001",
            "3.0000000000000000001",
        ]
    ),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)
_TYPES = ["compute.instance.create.end", "volume.create.end", "image.upload", "floatingip.create.end"]
_MEMBERS = ["vcpus", "memory_mb", "root_gb", "ephemeral_gb", "size", "progress", "other"]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(_TYPES),
    st.dictionaries(st.sampled_from(_MEMBERS), _NUMBER_TEXTS, max_size=6),
    st.one_of(st.none(), _NUMBER_TEXTS),
)
def test_the_fast_inner_decode_maps_as_the_exact_decoder(
    event_type: str, members: dict[str, str], nested: str | None
) -> None:
    """orjson reads the oslo message unless the payload's own members hold a float: whatever the
    numbers' texts, the mapped event is the one the exact (Decimal) decoder gives."""
    numbers = "".join(f', "{name}": {text}' for name, text in members.items())
    deep = "" if nested is None else f', "image_meta": {{"min_ram": {nested}}}'
    payload = (
        '{"instance_id": "vm-1", "volume_id": "v-1", "id": "i-1", "tenant_id": "t", "owner": "t", '
        f'"instance_type": "m1", "state": "active"{numbers}{deep}}}'
    )
    inner = (
        f'{{"message_id": "m-1", "event_type": "{event_type}", '
        f'"timestamp": "2026-03-01 10:00:00.000001", "payload": {payload}}}'
    )
    body = json.dumps({"oslo.version": "2.0", "oslo.message": inner})
    fast = map_notification(body, cloud="c")
    with patch.object(_decode, "_inner", _decode._loads):
        exact = map_notification(body, cloud="c")
    assert fast == exact
