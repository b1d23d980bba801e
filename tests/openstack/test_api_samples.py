"""Contract tests: the services' own api-ref samples (``api_samples/``, origins in its README), read by
the adapter's parsers at the microversions the adapter negotiates (nova 2.47, else 2.1; cinder 3.0, as
it sends no cinder header; glance v2, neutron v2.0 and octavia v2 are unversioned)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from keystoneauth1 import access

from tally.openstack._adapter import EMBEDDED_FLAVOR, negotiate_microversion
from tally.openstack._evidence import (
    instance_size,
    is_soft_deleted,
    observe_floating_ip,
    observe_image,
    observe_loadbalancer,
    observe_server,
    observe_volume,
    volume_type_name,
)
from tally.reconcile import ObservedResource, SizeNameEntry

SAMPLES = Path(__file__).parent / "api_samples"
GIB = 2**30


def sample(name: str) -> Any:
    return json.loads((SAMPLES / name).read_text())


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def test_every_sample_is_named_in_the_readme() -> None:
    readme = (SAMPLES / "README.md").read_text()
    assert sorted(p.name for p in SAMPLES.glob("*.json") if f"`{p.name}`" not in readme) == []


# -- nova ----------------------------------------------------------------------------------------------


def test_nova_version_document_negotiates_the_embedded_flavor() -> None:
    version = sample("nova-version-v2.1.json")
    assert version["version"]["version"] == "2.104"
    assert negotiate_microversion(version) == EMBEDDED_FLAVOR
    assert negotiate_microversion(sample("nova-versions.json")) == EMBEDDED_FLAVOR


def test_nova_server_at_2_47_is_observed_with_its_embedded_flavor() -> None:
    (server,) = sample("nova-servers-details-v2.47.json")["servers"]
    assert observe_server(server, None) == ObservedResource(
        "instance",
        "764e369e-a874-4401-b7ce-43e4760888da",
        "6f70656e737461636b20342065766572",
        "active",
        {"vcpus": 1, "ram_gb": 0.5, "disk_gb": 1, "flavor": "m1.tiny.specs"},
        utc(2017, 2, 14, 19, 24, 43, 891568),  # the launch, not the request a second earlier
        utc(2017, 2, 14, 19, 24, 43),
        False,
        created_state="active",
    )
    assert not is_soft_deleted(server)


def test_nova_server_at_2_1_takes_its_size_from_the_flavor_listing() -> None:
    (server,) = sample("nova-servers-details-v2.1.json")["servers"]
    flavors = {f["id"]: f for f in sample("nova-flavors-detail-v2.1.json")["flavors"]}
    observed = observe_server(server, flavors)
    assert observed.size == {"vcpus": 1, "ram_gb": 0.5, "disk_gb": 1, "flavor": "m1.tiny"}
    assert (observed.state, observed.transitional) == ("active", False)
    assert observed.created_at == utc(2013, 9, 23, 13, 53, 12, 774549)
    # Below 2.47 the server names its flavor by id only: unsized without the listing.
    assert observe_server(server, None).size is None


def test_nova_flavor_listing_sizes_every_flavor() -> None:
    sizes = [instance_size(f) for f in sample("nova-flavors-detail-v2.1.json")["flavors"]]
    assert [s and (s["flavor"], s["vcpus"], s["ram_gb"], s["disk_gb"]) for s in sizes] == [
        ("m1.tiny", 1, 0.5, 1),
        ("m1.small", 1, 2, 20),
        ("m1.medium", 2, 4, 40),
        ("m1.large", 4, 8, 80),
        ("m1.xlarge", 8, 16, 160),
        ("m1.tiny.specs", 1, 0.5, 1),
    ]


@pytest.mark.parametrize(("task_state", "transitional"), [(None, False), ("restoring", True)])
def test_nova_soft_deleted_server_is_observed_restorable(task_state: str | None, transitional: bool) -> None:
    # No sample lists a soft-deleted server: the 2.47 one as nova shows it after a delete under a
    # reclaim interval (vm_state soft-delete, status SOFT_DELETED, power state shutdown).
    server = copy.deepcopy(sample("nova-servers-details-v2.47.json")["servers"][0])
    server.update(
        {"OS-EXT-STS:vm_state": "soft-delete", "OS-EXT-STS:task_state": task_state, "status": "SOFT_DELETED"}
    )
    server["OS-EXT-STS:power_state"] = 4
    assert is_soft_deleted(server)
    observed = observe_server(server, None)
    assert (observed.state, observed.transitional) == ("soft_deleted", transitional)


# -- cinder --------------------------------------------------------------------------------------------


def test_cinder_volume_at_3_0_is_observed_in_transition_until_created() -> None:
    (volume,) = sample("cinder-volumes-detail-v3.0.json")["volumes"]
    assert observe_volume(volume) == ObservedResource(
        "volume",
        "cb49b381-9012-40cb-b8ee-80c19a4801b5",
        "89afd400-b646-4bbc-b12b-c0a4d63e5bd3",
        "creating",
        {"size_gb": 10, "type": "__DEFAULT__"},
        utc(2018, 11, 28, 6, 25, 15, 288987),
        utc(2018, 11, 28, 6, 25, 15, 288987),  # updated_at null: read at its creation
        True,
        created_state="available",
    )


def test_cinder_attached_volume_is_observed_in_use() -> None:
    volume = copy.deepcopy(sample("cinder-volumes-detail-v3.0.json")["volumes"][0])
    volume.update({"status": "in-use", "updated_at": "2018-11-28T06:26:01.000000"})
    observed = observe_volume(volume)
    assert (observed.state, observed.transitional) == ("in-use", False)


def test_cinder_volume_types_name_their_ids() -> None:
    listed = [volume_type_name(t) for t in sample("cinder-types-v3.0.json")["volume_types"]]
    assert listed == [
        SizeNameEntry("volume", "type", "ef512777-6552-4013-82f0-57a96e5804b7", "vol-type-002"),
        SizeNameEntry("volume", "type", "18947ff2-ad57-42b2-9350-34262e530203", "vol-type-001"),
        SizeNameEntry("volume", "type", "7a56b996-b73f-4233-9f00-dd6a68b49b27", "__DEFAULT__"),
    ]
    # Cinder's type listing sends no next link: why the adapter pages it until a page is empty.
    assert "volume_types_links" not in sample("cinder-types-v3.0.json")


# -- neutron, glance, octavia --------------------------------------------------------------------------


def test_neutron_floating_ips_are_observed_with_their_ip_version() -> None:
    observed = [observe_floating_ip(f) for f in sample("neutron-floatingips.json")["floatingips"]]
    assert [(o.resource_id, o.project_id, o.size) for o in observed] == [
        ("2f245a7b-796b-4f26-9cf9-9e82d248fda7", "4969c491a3c74ee4af974e6d800c62de", {"ip_version": 4}),
        ("61cea855-49cb-4846-997d-801b70c71bdd", "4969c491a3c74ee4af974e6d800c62de", {"ip_version": 4}),
        ("898b198e-49f7-47d6-a7e1-53f626a548e6", "4969c491a3c74ee4af974e6d800c62de", {"ip_version": 4}),
    ]
    assert observed[0].created_at == utc(2016, 12, 21, 10, 55, 50)
    assert observed[0].changed_at == utc(2016, 12, 21, 10, 55, 53)


def test_glance_images_are_observed_in_gib() -> None:
    body = sample("glance-images.json")
    observed = [observe_image(i) for i in body["images"]]
    assert [(o.resource_id, o.project_id, o.size) for o in observed] == [
        (
            "1bea47ed-f6a9-463b-b423-14b9cca9ad27",
            "5ef70662f8b34079a6eddb8da9d75fe8",
            {"size_gb": 13167616 / GIB},
        ),
        (
            "781b3762-9469-4cec-b58d-3349e5de4e9c",
            "5ef70662f8b34079a6eddb8da9d75fe8",
            {"size_gb": 476704768 / GIB},
        ),
    ]
    assert observed[1].changed_at == utc(2014, 11, 3, 16, 40, 10)
    assert "next" not in body  # a page that is not full: the adapter stops there


def test_octavia_loadbalancer_is_observed_with_its_counts() -> None:
    (lb,) = sample("octavia-loadbalancers.json")["loadbalancers"]
    observed = observe_loadbalancer(lb)
    assert observed == ObservedResource(
        "loadbalancer",
        "607226db-27ef-4d41-ae89-f2a800e9c2db",
        "e3cd678b11784734bc366148aa37580e",
        "active",
        {"listeners": 1, "pools": 1},
        utc(2017, 2, 28, 0, 41, 44),
        utc(2017, 2, 28, 0, 43, 30),
        False,
        created_size={"listeners": 0, "pools": 0},
    )
    assert observe_loadbalancer({**lb, "provisioning_status": "DELETED"}) is None
    pending = observe_loadbalancer({**lb, "provisioning_status": "PENDING_UPDATE"})
    assert pending is not None and pending.transitional


# -- keystone ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "services"),
    [
        ("keystone-token-password-project.json", {"compute", "network", "image", "volume", "identity"}),
        ("keystone-token-application-credential.json", {"identity"}),
    ],
)
def test_keystone_token_catalog_is_read_by_keystoneauth(name: str, services: set[str]) -> None:
    """The adapter takes its endpoints from keystoneauth1's reading of the token (``Grant.endpoint``)."""
    body = sample(name)
    info = access.create(body=body, auth_token="tok")
    catalog = info.service_catalog
    for service in services:
        assert catalog.url_for(service_type=service, interface="public"), service
    assert info.project_id == body["token"]["project"]["id"]
