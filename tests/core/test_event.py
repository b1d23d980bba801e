"""The canonical event's wire validation: every refusal names the member."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tally.core import Category, EventInvalid, category_of, parse_event


def wire(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "event_id": "msg-1",
        "timestamp": "2026-03-01T10:00:00Z",
        "event_type": "compute.instance.create.end",
        "platform": "openstack",
        "cloud": "os-dev",
        "resource_type": "instance",
        "resource_id": "i-1",
        "project_id": "p-1",
        "payload": {
            "state": "active",
            "size": {"vcpus": 4, "ram_gb": 8, "disk_gb": 80, "flavor": "m1.large"},
        },
    }
    base.update(overrides)
    return base


def refusal(raw: object) -> str:
    with pytest.raises(EventInvalid) as caught:
        parse_event(raw)
    return caught.value.reason


def test_golden_event_parses_in_utc() -> None:
    event = parse_event(wire(timestamp="2026-03-01T11:00:00+01:00"))
    assert event.timestamp == datetime(2026, 3, 1, 10, tzinfo=UTC)
    assert event.source == "collector"
    assert event.category is Category.CREATE


@pytest.mark.parametrize(
    ("event_type", "category"),
    [
        ("compute.instance.create.end", Category.CREATE),
        ("volume.delete.end", Category.DELETE),
        ("sync.update", Category.UPDATE),
        ("x.create.delete", Category.CREATE),
        ("image.upload", Category.UPDATE),
    ],
)
def test_category_comes_from_the_type_name(event_type: str, category: Category) -> None:
    assert category_of(event_type) is category


def test_event_type_length_is_checked_before_the_pattern() -> None:
    assert "longer than 512" in refusal(wire(event_type="A" * 513))
    assert "does not match" in refusal(wire(event_type="A.b"))


@pytest.mark.parametrize(
    "member", ["event_id", "platform", "cloud", "resource_type", "resource_id", "project_id"]
)
def test_missing_member_is_named(member: str) -> None:
    raw = wire()
    del raw[member]
    assert refusal(raw) == f"schema: {member} is required"


def test_over_long_event_id_is_refused() -> None:
    assert refusal(wire(event_id="x" * 257)).startswith("schema: event_id is longer")


def test_nul_anywhere_is_a_schema_refusal() -> None:
    assert "NUL" in refusal(wire(payload={"state": "a\x00b", "size": {}}))


def test_unknown_top_level_member_is_refused_but_payload_extras_are_kept() -> None:
    assert refusal(wire(colour="red")) == "schema: unknown member colour"
    event = parse_event(wire(payload={"state": "active", "size": {}, "note": 1}))
    assert event.payload["note"] == 1


def test_reserved_platform_is_refused() -> None:
    assert "reserved" in refusal(wire(platform="meta"))


def test_naive_timestamp_is_refused() -> None:
    assert refusal(wire(timestamp="2026-03-01T10:00:00")).startswith("schema: timestamp")


def test_create_needs_state_and_size_delete_needs_neither() -> None:
    assert refusal(wire(payload={"state": "active"})) == "schema: payload.size is required on create"
    assert "payload.state is required" in refusal(wire(event_type="sync.update", payload={}))
    assert parse_event(wire(event_type="volume.delete.end", payload={})).category is Category.DELETE


def test_unknown_source_is_refused_and_the_pipeline_stamp_wins() -> None:
    assert refusal(wire(source="engine")).startswith("schema: source")
    assert parse_event(wire(source="reconciliation"), source="collector").source == "collector"


def test_an_instant_outside_years_1_to_9999_in_utc_is_a_timestamp_refusal() -> None:
    assert refusal(wire(timestamp="0001-01-01T00:00:00+01:00")).startswith("schema: timestamp")
    assert refusal(wire(timestamp="9999-12-31T23:30:00-01:00")).startswith("schema: timestamp")


@pytest.mark.parametrize("event_type", ["compute.instance.create.end\n", "compute.instance\n"])
def test_event_type_is_matched_in_full(event_type: str) -> None:
    assert refusal(wire(event_type=event_type)).startswith("schema: event_type")


@pytest.mark.parametrize(
    ("value", "member"),
    [
        (10**40 + 1, "payload.size.vcpus"),
        (2**63, "payload.size.vcpus"),
        (-(2**63) - 1, "payload.size.vcpus"),
        ([1, 2**64], "payload.size.vcpus[1]"),
    ],
)
def test_an_integer_beyond_64_bits_is_refused_naming_the_member(value: object, member: str) -> None:
    size = {"vcpus": value, "ram_gb": 8, "disk_gb": 80, "flavor": "m1.large"}
    reason = refusal(wire(payload={"state": "active", "size": size}))
    assert reason == f"schema: {member} is an integer outside the signed 64-bit range"


def test_integers_at_the_64_bit_bounds_are_kept_exactly() -> None:
    size = {"vcpus": 2**63 - 1, "ram_gb": -(2**63), "disk_gb": 80, "flavor": "m1.large"}
    event = parse_event(wire(payload={"state": "active", "size": size}))
    assert event.size == size


@pytest.mark.parametrize(
    "stamp",
    [
        "2026-03-01",
        "2026-03-01T10:00Z",
        "2026-03-01T10Z",
        "20260301T100000Z",
        "2026-W09-7T10:00:00Z",
        "2026-03-01 10:00:00Z",
        "2026-03-01T10:00:00,5Z",
        "2026-03-01T10:00:00+0100",
        "2026-03-01T10:00:00+01",
        " 2026-03-01T10:00:00Z",
        "2026-03-01T10:00:00Z\n",
    ],
)
def test_an_instant_beyond_rfc_3339_is_refused(stamp: str) -> None:
    assert refusal(wire(timestamp=stamp)).startswith("schema: timestamp")


def test_a_fraction_finer_than_a_microsecond_is_refused() -> None:
    reason = refusal(wire(timestamp="2026-03-01T10:00:00.123456789Z"))
    assert reason.startswith("schema: timestamp") and "microsecond" in reason


def test_rfc_3339_forms_are_accepted_to_the_microsecond() -> None:
    expected = datetime(2026, 3, 1, 10, 0, 0, 123456, tzinfo=UTC)
    for stamp in (
        "2026-03-01T10:00:00.123456Z",
        "2026-03-01t11:00:00.123456+01:00",
        "2026-03-01T10:00:00.123456000z",
    ):
        assert parse_event(wire(timestamp=stamp)).timestamp == expected
