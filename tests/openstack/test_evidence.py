"""Listing documents to observations: transition evidence per type, sizes, instants, microversions."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tally.openstack._evidence import (
    ListingInvalid,
    instance_in_transition,
    instance_state,
    ip_version,
    loadbalancer_in_transition,
    observe_deleted_server,
    observe_image,
    observe_loadbalancer,
    observe_server,
    observe_volume,
    volume_in_transition,
)
from tally.openstack._instants import _rewritten, parse_platform_instant
from tally.openstack.internals import (
    AdapterConfigError,
    OpenStackSettings,
    negotiate_microversion,
    parse_adapter_config,
)


def test_instance_in_transition() -> None:
    assert instance_in_transition("active", "rebooting")
    assert instance_in_transition("building", None)
    assert not instance_in_transition("active", None)
    assert not instance_in_transition("stopped", "")


def test_volume_in_transition() -> None:
    for status in ("creating", "deleting", "attaching", "extending", "retyping", "restoring-backup"):
        assert volume_in_transition(status)
    for status in ("available", "in-use", "error", "maintenance", "awaiting-transfer", "made-up"):
        assert not volume_in_transition(status)


def test_loadbalancer_in_transition() -> None:
    assert loadbalancer_in_transition("PENDING_DELETE")
    assert not loadbalancer_in_transition("ACTIVE")
    assert observe_loadbalancer({"id": "x", "provisioning_status": "DELETED"}) is None
    lb = observe_loadbalancer(
        {
            "id": "x",
            "project_id": "p",
            "provisioning_status": "PENDING_DELETE",
            "listeners": [{}],
            "pools": [],
        }
    )
    assert lb is not None and lb.transitional and lb.size == {"listeners": 1, "pools": 0}
    assert lb.created_size == {"listeners": 0, "pools": 0}  # what the collector's create books


def test_instance_state_normalised_as_the_collector_does() -> None:
    assert [instance_state(s) for s in ("active", "stopped", "shelved_offloaded", "resized", "paused")] == [
        "active",
        "shutoff",
        "shelved",
        "active",
        "paused",
    ]


def test_observe_server_embedded_and_listed_flavors() -> None:
    doc = {
        "id": "vm",
        "tenant_id": "p",
        "OS-EXT-STS:vm_state": "active",
        "OS-EXT-STS:task_state": None,
        "created": "2026-07-01T00:00:00Z",
        "updated": "2026-07-01T00:05:00Z",
        "flavor": {"original_name": "m1.large", "vcpus": 4, "ram": 8192, "disk": 40, "ephemeral": 40},
    }
    observed = observe_server(doc, None)
    assert observed.size == {"vcpus": 4, "ram_gb": 8, "disk_gb": 80, "flavor": "m1.large"}
    assert observed.changed_at == datetime(2026, 7, 1, 0, 5, tzinfo=UTC)
    old = dict(doc, flavor={"id": "7"})
    listed = {
        "7": {"id": "7", "name": "m1.tiny", "vcpus": 1, "ram": 512, "disk": 1, "OS-FLV-EXT-DATA:ephemeral": 0}
    }
    assert observe_server(old, listed).size == {"vcpus": 1, "ram_gb": 0.5, "disk_gb": 1, "flavor": "m1.tiny"}
    assert observe_server(old, None).size is None  # flavors refused: observed without a size


def test_observe_server_created_at_its_launch_else_its_request() -> None:
    doc = {
        "id": "vm",
        "tenant_id": "p",
        "OS-EXT-STS:vm_state": "active",
        "created": "2026-07-01T00:00:00Z",
        "updated": "2026-07-01T00:05:00Z",
        "OS-SRV-USG:launched_at": "2026-07-01T00:00:47.125000",
        "flavor": {"id": "7"},
    }
    assert observe_server(doc, None).created_at == datetime(2026, 7, 1, 0, 0, 47, 125000, tzinfo=UTC)
    building = dict(doc, **{"OS-SRV-USG:launched_at": None})
    assert observe_server(building, None).created_at == datetime(2026, 7, 1, tzinfo=UTC)
    # the facts a create of a history that lacks one carries: nova launches a server active
    assert observe_server(dict(doc, **{"OS-EXT-STS:vm_state": "stopped"}), None).created_state == "active"


def test_observe_deleted_server_at_terminated_at() -> None:
    gone = observe_deleted_server(
        {"id": "vm", "tenant_id": "p", "OS-SRV-USG:terminated_at": "2026-07-02T10:00:00.250000"}, None
    )
    assert gone.deleted_at == datetime(2026, 7, 2, 10, 0, 0, 250000, tzinfo=UTC)
    assert gone.created_at is None and gone.state is None  # never launched: no life to book


def test_observe_deleted_server_with_its_launch_and_the_flavor_it_ended_with() -> None:
    doc = {
        "id": "vm",
        "tenant_id": "p",
        "OS-SRV-USG:launched_at": "2026-07-02T09:40:00.500000",
        "OS-SRV-USG:terminated_at": "2026-07-02T10:00:00.250000",
        "flavor": {"id": "7"},
    }
    listed = {"7": {"id": "7", "name": "ci", "vcpus": 2, "ram": 4096, "disk": 20}}
    gone = observe_deleted_server(doc, listed)
    assert gone.created_at == datetime(2026, 7, 2, 9, 40, 0, 500000, tzinfo=UTC)
    assert gone.state == "active"
    assert gone.size == {"vcpus": 2, "ram_gb": 4, "disk_gb": 20, "flavor": "ci"}
    embedded = dict(doc, flavor={"original_name": "ci", "vcpus": 2, "ram": 4096, "disk": 20})
    assert observe_deleted_server(embedded, None).size == gone.size


def test_observe_volume_reads_updated_else_created() -> None:
    v = observe_volume(
        {
            "id": "v",
            "status": "in-use",
            "size": 10,
            "volume_type": "ssd",
            "os-vol-tenant-attr:tenant_id": "p",
            "created_at": "2026-07-01T00:00:00.000000",
            "updated_at": None,
        }
    )
    assert v.changed_at == v.created_at and v.size == {"size_gb": 10, "type": "ssd"}


def test_an_image_without_owner_is_invalid_and_a_deactivated_one_is_live() -> None:
    with pytest.raises(ListingInvalid, match="names no owner"):
        observe_image({"id": "i", "owner": None, "size": 1})
    image = observe_image({"id": "i", "owner": "p", "status": "deactivated", "size": 2**29})
    assert image.state == "active" and image.size == {"size_gb": 0.5}


def test_a_queued_image_is_observed_at_size_0_from_its_creation_and_never_in_transition() -> None:
    image = observe_image(
        {
            "id": "i",
            "owner": "p",
            "status": "queued",
            "size": None,
            "created_at": "2026-07-01T10:00:00Z",
            "updated_at": "2026-07-01T10:00:00Z",
        }
    )
    assert image.state == "active" and image.size == {"size_gb": 0}
    assert image.created_at == datetime(2026, 7, 1, 10, tzinfo=UTC) and not image.transitional


def test_ip_version() -> None:
    assert ip_version("2001:db8::1") == 6 and ip_version("203.0.113.1") == 4 and ip_version(None) == 4


def test_parse_platform_instant_reads_every_layout() -> None:
    expected = datetime(2017, 2, 14, 19, 24, 42, tzinfo=UTC)
    for text in (
        "2017-02-14T19:24:42Z",
        "2017-02-14T19:24:42",
        "2017-02-14 19:24:42",
        "2017-02-14T19:24:42+00:00",
    ):
        assert parse_platform_instant(text) == expected
    assert parse_platform_instant("2017-02-14T19:24:42.891568") == expected.replace(microsecond=891568)
    assert parse_platform_instant(None) is None and parse_platform_instant("") is None


def test_negotiate_microversion() -> None:
    assert negotiate_microversion({"version": {"version": "2.96", "min_version": "2.1"}}) == (2, 47)
    assert negotiate_microversion({"version": {"version": "2.38"}}) == (2, 38)
    assert negotiate_microversion({"version": {"version": ""}}) is None
    versions = {
        "versions": [{"status": "DEPRECATED", "version": ""}, {"status": "CURRENT", "version": "2.104"}]
    }
    assert negotiate_microversion(versions) == (2, 47)


def test_parse_adapter_config() -> None:
    assert parse_adapter_config({"os_cloud": "x"}) == OpenStackSettings("x", False)
    assert parse_adapter_config({"os_cloud": "x", "include_octavia": True}).include_octavia
    with pytest.raises(AdapterConfigError, match='unknown setting "include_octavia_lb"'):
        parse_adapter_config({"os_cloud": "x", "include_octavia_lb": True})
    with pytest.raises(AdapterConfigError, match='"os_cloud" is required'):
        parse_adapter_config({})
    with pytest.raises(AdapterConfigError, match="include_octavia"):
        parse_adapter_config({"os_cloud": "x", "include_octavia": "yes"})


@given(
    instant=st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2100, 1, 1)),
    layout=st.sampled_from(
        ["%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%d"]
    ),
    zone=st.sampled_from(["", "+00:00", "+02:00", "-05:30", "Z", " ", "z"]),
)
def test_parse_platform_instant_reads_a_text_as_its_rewriting_does(
    instant: datetime, layout: str, zone: str
) -> None:
    # The fast path reads the layouts Python takes as they are; it must read them as the rewriting does.
    text = instant.strftime(layout) + zone
    assert parse_platform_instant(text) == _rewritten(text)
    parsed = parse_platform_instant(text)
    assert parsed is None or parsed.tzinfo is UTC
