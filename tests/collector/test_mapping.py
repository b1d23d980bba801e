"""The mapping against golden fixtures (payloads as the spec shows them) and its edge rules."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tally.collector import Mapped, Skipped, map_notification
from tally.collector.internals import RULES, Unparseable
from tally.core import deterministic_event_id, parse_event, parse_instant

FIXTURES = sorted((Path(__file__).parent / "fixtures").glob("*.json"))


def _fixture(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _inner(body: dict[str, Any]) -> dict[str, Any]:
    return json.loads(body["oslo.message"])


def _v2(inner: dict[str, Any]) -> bytes:
    return json.dumps({"oslo.version": "2.0", "oslo.message": json.dumps(inner)}).encode()


def _body_of(name: str) -> dict[str, Any]:
    return _inner(_fixture(Path(__file__).parent / "fixtures" / f"{name}.json")["notification"]["body"])


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_golden_fixture(path: Path) -> None:
    case = _fixture(path)
    body = json.dumps(case["notification"]["body"]).encode()
    outcome = map_notification(body, cloud="os-dev")
    expected = case["expected"]
    if "skipped" in expected:
        assert isinstance(outcome, Skipped)
        assert outcome.reason == expected["skipped"]
    else:
        assert isinstance(outcome, Mapped), outcome
        assert outcome.event == expected
        parse_event(outcome.event)  # the Reporting API's own validation takes it


def test_fixtures_cover_every_mapped_type() -> None:
    covered = {_inner(_fixture(p)["notification"]["body"])["event_type"] for p in FIXTURES}
    assert set(RULES) <= covered
    assert len(RULES) == 26


def test_v1_bare_message_maps_like_v2() -> None:
    inner = _body_of("instance_create")
    v1 = map_notification(json.dumps(inner), cloud="os-dev")
    v2 = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(v1, Mapped) and isinstance(v2, Mapped)
    assert v1.event == v2.event


def test_dict_body_is_accepted() -> None:
    inner = _body_of("volume_create")
    outcome = map_notification({"oslo.version": "2.0", "oslo.message": json.dumps(inner)}, cloud="c1")
    assert isinstance(outcome, Mapped) and outcome.event["cloud"] == "c1"


def test_empty_message_id_gives_the_deterministic_id() -> None:
    inner = _body_of("instance_create")
    inner["message_id"] = ""
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Mapped)
    expected = deterministic_event_id(
        "openstack",
        "os-dev",
        inner["payload"]["instance_id"],
        "compute.instance.create.end",
        parse_instant("2026-03-01T10:00:00.123456Z"),
    )
    assert outcome.event["event_id"] == expected


@pytest.mark.parametrize(
    ("stamp", "expected"),
    [
        ("2026-03-01 10:00:00.123456", "2026-03-01T10:00:00.123456Z"),
        ("2026-03-01 10:00:00", "2026-03-01T10:00:00Z"),
        ("2026-03-01T10:00:00Z", "2026-03-01T10:00:00Z"),
        ("2026-03-01T11:30:00.5+01:30", "2026-03-01T10:00:00.5Z"),
    ],
)
def test_timestamp_layouts_read_as_utc(stamp: str, expected: str) -> None:
    inner = _body_of("instance_create") | {"timestamp": stamp}
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Mapped) and outcome.event["timestamp"] == expected


@pytest.mark.parametrize("stamp", [None, "", "yesterday", "2026-03-01", "2026-03-01T10:00:00", 17])
def test_missing_or_unparseable_timestamp_is_unparseable(stamp: object) -> None:
    inner = _body_of("instance_create")
    if stamp is None:
        del inner["timestamp"]
    else:
        inner["timestamp"] = stamp
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Unparseable) and outcome.reason == "timestamp"
    assert outcome.message_id == inner["message_id"]


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ("active", "active"),
        ("stopped", "shutoff"),
        ("shelved_offloaded", "shelved"),
        ("resized", "active"),
        ("paused", "paused"),
        ("suspended", "suspended"),
        ("error", "error"),
        ("rescued", "rescued"),
        (None, ""),
    ],
)
def test_vm_state_normalisation(state: str | None, expected: str) -> None:
    inner = _body_of("instance_create")
    if state is None:
        del inner["payload"]["state"]
    else:
        inner["payload"]["state"] = state
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Mapped) and outcome.event["payload"]["state"] == expected


def test_instance_size_is_exact_and_omits_wrong_types() -> None:
    inner = _body_of("instance_create")
    inner["payload"].update(memory_mb=1000, root_gb=10, ephemeral_gb=None, vcpus="4", instance_type=7)
    del inner["payload"]["ephemeral_gb"]
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Mapped)
    size = outcome.event["payload"]["size"]
    assert size == {"ram_gb": 0.9765625, "disk_gb": 10}  # vcpus and flavor of the wrong type: omitted
    assert Decimal(repr(size["ram_gb"])) == Decimal(1000) / Decimal(1024)


def test_decimal_quantities_stay_exact() -> None:
    body = _v2(_body_of("instance_create")).replace(b'\\"root_gb\\": 80', b'\\"root_gb\\": 0.1')
    body = body.replace(b'\\"ephemeral_gb\\": 0', b'\\"ephemeral_gb\\": 0.2')
    outcome = map_notification(body, cloud="os-dev")
    assert isinstance(outcome, Mapped)
    # 0.1 + 0.2 in float arithmetic would be 0.30000000000000004.
    assert json.dumps(outcome.event["payload"]["size"]["disk_gb"]) == "0.3"


def test_disk_omitted_when_both_parts_missing() -> None:
    inner = _body_of("instance_create")
    del inner["payload"]["root_gb"], inner["payload"]["ephemeral_gb"]
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Mapped) and "disk_gb" not in outcome.event["payload"]["size"]


def test_project_falls_back_to_context_project_then_tenant() -> None:
    inner = _body_of("instance_create")
    inner["payload"]["tenant_id"] = ""
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Mapped) and outcome.event["project_id"] == "ctxproj"
    del inner["_context_project_id"]
    inner["_context_tenant_id"] = "legacytenant"
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Mapped) and outcome.event["project_id"] == "legacytenant"


@pytest.mark.parametrize(
    "context",
    [
        {"_context_project": "owner-1"},  # older oslo.context: project / tenant, not the *_id forms
        {"_context_tenant": "owner-1"},
        {"context": {"project_id": "owner-1", "user_id": "u"}},  # a context sent as a plain dict
        {"_context": {"tenant": "owner-1"}},
    ],
)
def test_a_floating_ip_delete_takes_its_owner_from_any_form_of_the_context(
    context: dict[str, object],
) -> None:
    inner = _body_of("floatingip_delete")
    for key in [k for k in inner if k.startswith("_context_")]:
        del inner[key]
    inner.update(context)
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Mapped) and outcome.event["project_id"] == "owner-1"


def test_a_delete_with_no_owner_anywhere_is_mapped_with_an_empty_owner() -> None:
    """The API refuses and dead-letters it with the item (the consumer counts it): never dropped here."""
    inner = _body_of("floatingip_delete")
    for key in [k for k in inner if k.startswith("_context_")]:
        del inner[key]
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Mapped) and outcome.event["project_id"] == ""


def test_volume_status_defaults_to_available() -> None:
    inner = _body_of("volume_resize")
    del inner["payload"]["status"]
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Mapped) and outcome.event["payload"]["state"] == "available"


@pytest.mark.parametrize(
    ("address", "version"), [("2001:db8::5", 6), ("203.0.113.9", 4), ("junk", 4), (None, 4)]
)
def test_floating_ip_version(address: str | None, version: int) -> None:
    inner = _body_of("floatingip_create")
    inner["payload"]["floatingip"]["floating_ip_address"] = address
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Mapped) and outcome.event["payload"]["size"] == {"ip_version": version}


def test_loadbalancer_counts_lists_and_falls_back_to_id() -> None:
    inner = _body_of("loadbalancer_create")
    payload = inner["payload"]
    payload["id"] = payload.pop("loadbalancer_id")
    payload.update(listeners=[{"id": "l1"}, {"id": "l2"}], pools="many")
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Mapped)
    assert outcome.event["resource_id"] == payload["id"]
    assert outcome.event["payload"]["size"] == {"listeners": 2}  # a non-array count is omitted


@pytest.mark.parametrize("size", [None, 0, "absent"])
def test_image_create_of_a_queued_image_books_it_at_size_0(size: object) -> None:
    inner = _body_of("image_create")
    inner["payload"]["status"] = "queued"
    if size == "absent":
        del inner["payload"]["size"]
    else:
        inner["payload"]["size"] = size
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Mapped)
    assert outcome.event["event_type"] == "image.create"
    assert outcome.event["payload"]["state"] == "active"
    assert outcome.event["payload"]["size"] == {"size_gb": 0}


def test_image_create_with_a_negative_size_becomes_an_event_the_api_refuses() -> None:
    inner = _body_of("image_create")
    inner["payload"]["size"] = -5
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Mapped) and outcome.event["payload"]["size"] == {"size_gb": -5 / 2**30}


def test_image_upload_without_a_size_states_no_size_for_the_api_to_refuse() -> None:
    inner = _body_of("image_upload")
    inner["payload"]["size"] = None
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Mapped) and outcome.event["payload"]["size"] == {}


@pytest.mark.parametrize(
    "event_type",
    [
        "volume.transfer.create.start",
        "volume.transfer.create.end",
        "volume.transfer.accept.start",
        "volume.transfer.delete.start",
        "volume.transfer.delete.end",
    ],
)
def test_volume_transfer_notifications_but_the_accept_end_are_not_booked(event_type: str) -> None:
    # A cancelled transfer's delete.end must never read as the volume's delete.
    inner = _body_of("volume_transfer_accept") | {"event_type": event_type}
    inner["payload"]["status"] = "awaiting-transfer"
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Skipped) and outcome.reason == "unmapped"


def test_mapped_event_over_64k_is_skipped() -> None:
    inner = _body_of("instance_create")
    inner["payload"]["instance_type"] = "x" * 70_000
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Skipped) and outcome.reason == "oversized_event"


def test_wrong_payload_types_still_become_an_event_the_api_refuses() -> None:
    inner = _body_of("instance_create")
    inner["payload"] = ["not", "an", "object"]
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Mapped)
    with pytest.raises(ValueError, match="schema: resource_id"):
        parse_event(outcome.event)


def test_huge_integers_do_not_break_the_mapping() -> None:
    inner = _body_of("instance_create")
    inner["payload"]["vcpus"] = 10**30
    outcome = map_notification(_v2(inner), cloud="os-dev")
    assert isinstance(outcome, Mapped) and outcome.event["payload"]["size"]["vcpus"] == 10**30
