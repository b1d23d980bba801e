"""Oracle format 4: the collector's view of the world, round-tripped, and strict on reading."""

from __future__ import annotations

import itertools
from datetime import timedelta

import orjson
import pytest

from tally.core import StoredEvent, name_event_size, parse_event
from tally.simulator import Month, OracleError, compare, expected_events, read_oracle, stored_record
from tally.simulator._platform import platform_created


def test_round_trip_is_byte_identical(july: Month) -> None:
    data = july.oracle.to_json()
    again = read_oracle(data)
    assert again == july.oracle
    assert again.to_json() == data


def test_document_shape(july: Month) -> None:
    doc = orjson.loads(july.oracle.to_json())
    assert doc["format"] == 4
    assert doc["scale"] == july.scale
    assert doc["period_from"] == "2026-07-01T00:00:00Z"
    assert doc["period_to"] == "2026-08-01T00:00:00Z"
    keys = [(r["resource_type"], r["resource_id"]) for r in doc["resources"]]
    assert keys == sorted(keys)
    assert {r["resource_type"] for r in doc["resources"]} == {
        "instance",
        "volume",
        "floating_ip",
        "image",
        "loadbalancer",
    }
    for r in doc["resources"]:
        spans = r["intervals"]
        assert all(s["from"] < s["to"] for s in spans)
        assert all(a["to"] <= b["from"] for a, b in itertools.pairwise(spans))
        assert all(
            (a["state"], a["project_id"], a["size"]) != (b["state"], b["project_id"], b["size"])
            for a, b in itertools.pairwise(spans)
            if a["to"] == b["from"]
        )
    sizes = {r["resource_type"]: r["intervals"][0]["size"] for r in doc["resources"]}
    assert set(sizes["instance"]) == {"vcpus", "ram_gb", "disk_gb", "flavor"}
    assert set(sizes["volume"]) == {"size_gb", "type"} and sizes["volume"]["type"] in {
        "ssd",
        "hdd",
        "standard",
    }
    assert sizes["floating_ip"] == {"ip_version": 4}
    assert set(sizes["image"]) == {"size_gb"}
    assert sizes["loadbalancer"] == {"listeners": 0, "pools": 0}
    assert sum(c["count"] for c in doc["counts"]) >= july.billable
    assert doc["traffic"] and all(t["egress_bytes"] > 0 for t in doc["traffic"])


def test_the_oracle_agrees_with_the_collector_mapping(july: Month) -> None:
    """Folding the expected events gives the oracle exactly, except what only a sync books: the
    balancer counts, and the awaiting-transfer status of a volume offered for transfer."""
    # Cinder notifies the volume type's id; the store names it by the type listing.
    names = {("volume", "type", t.id): t.name for t in july.world.volume_types}
    stored = []
    for wire in expected_events(july.notifications, cloud=july.cloud):
        event = name_event_size(parse_event(wire), names)
        stored.append(StoredEvent(event, event.timestamp))
    result = compare(july.oracle, stored_record(stored, cloud=july.cloud), settle=timedelta(0))
    assert result.exact == len(july.oracle.resources) - len(result.resources)
    # With no sync run recorded, nothing could have booked either: tolerated, naming no correction.
    assert result.tolerated_by_cause.keys() <= {"no run could book it"} and result.off == 0
    assert {r.resource_type for r in result.resources} == {"loadbalancer", "volume"}
    for r in result.resources:
        for d in r.differences:
            assert d.expected is not None and d.stored is not None
            if r.resource_type == "loadbalancer":
                assert d.fields == ("size",)
            else:
                # The collector still shows the available volume of the owner who offered it.
                assert d.fields == ("state",) and d.expected[0] == "awaiting-transfer"
                assert d.stored[0] == "available" and d.stored[1] == d.expected[1]
    assert sum(r.resource_type == "volume" for r in result.resources) == sum(
        n.event_type == "volume.transfer.create.end" for n in july.notifications
    )


def test_images_start_at_glance_create_at_size_0(july: Month) -> None:
    """Every image's first interval starts at its create, at size 0 until the upload (seed 000: an
    image is never in transition)."""
    images = [r for r in july.world.of_type("image") if r.created_at >= july.period_from]
    assert images
    for image in images:
        found = july.oracle.resource("image", image.resource_id)
        assert found is not None
        first, second = found.intervals[0], found.intervals[1]
        assert first.start == image.created_at and first.size == {"size_gb": 0}
        assert second.start == first.end and second.size["size_gb"] > 0


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(format=3), "format 3 is not 4"),
        (lambda d: d.update(scale=-1), "scale must be a number above 0"),
        (lambda d: d["resources"][0].pop("platform_created"), "member 'platform_created' missing"),
        (lambda d: d["resources"][0].update(platform_created="soon"), "not an RFC 3339 instant"),
        (lambda d: d.update(extra=1), "unknown member 'extra' in the document"),
        (lambda d: d["resources"][0].update(colour="red"), r"unknown member 'colour' in resources\[0\]"),
        (
            lambda d: d["resources"][0]["intervals"][0].update(x=1),
            r"unknown member 'x' in resources\[0\].intervals\[0\]",
        ),
        (lambda d: d["resources"][0].pop("workload"), "member 'workload' missing"),
        (lambda d: d["resources"][0].update(workload="batch"), "workload 'batch'"),
        (
            lambda d: d["resources"][0]["intervals"][0].update({"from": "yesterday"}),
            "not an RFC 3339 instant",
        ),
        (lambda d: d["counts"][0].update(count="3"), "must be an integer"),
    ],
)
def test_reading_refuses_bad_documents_in_one_line(july: Month, mutate: object, message: str) -> None:
    doc = orjson.loads(july.oracle.to_json())
    mutate(doc)  # type: ignore[operator]
    with pytest.raises(OracleError, match=message) as info:
        read_oracle(orjson.dumps(doc))
    assert "\n" not in str(info.value)


def test_reading_refuses_non_json() -> None:
    with pytest.raises(OracleError, match="not JSON"):
        read_oracle(b"{oops")


def test_the_platform_instants_are_the_worlds_as_its_services_list_them(july: Month) -> None:
    """What the compare dates a sync's create by comes from the document alone, equal to what the
    world it was generated from says (cinder to the microsecond, the other services to the second)."""
    again = read_oracle(july.oracle.to_json())
    expected = platform_created(july.world)
    instants = again.platform_instants()
    assert instants and all(expected[key] == at for key, at in instants.items())
    assert {r.resource_type for r in again.resources} == {t for t, _ in instants}
    assert all(at.microsecond == 0 for (t, _), at in instants.items() if t != "volume")
    assert any(at.microsecond for (t, _), at in instants.items() if t == "volume")
