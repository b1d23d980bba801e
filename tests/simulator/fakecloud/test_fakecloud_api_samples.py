"""The fake cloud answers in the services' own shapes: every member of their api-ref samples
(``tests/openstack/api_samples``), with a value of the same JSON kind, at the microversions the adapter
negotiates, as the admin account the adapter runs with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakecloud_support import Fake

pytestmark = pytest.mark.anyio

SAMPLES = Path(__file__).parents[2] / "openstack" / "api_samples"
NOVA_2_47 = {"OpenStack-API-Version": "compute 2.47"}


def sample(name: str) -> Any:
    return json.loads((SAMPLES / name).read_text())


def kind(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


# Values a service sends in place of the sample's kind: nova's image of a server booted from a volume.
OTHER_SHAPES = {"image": ""}


def departures(expected: dict[str, Any], answered: dict[str, Any]) -> list[str]:
    """Members of ``expected`` the answer lacks, or holds as another JSON kind (null matches any)."""
    out = []
    for member, value in expected.items():
        if member not in answered:
            out.append(f"{member}: missing")
        elif member in OTHER_SHAPES and answered[member] == OTHER_SHAPES[member]:
            continue
        elif value is not None and answered[member] is not None and kind(value) != kind(answered[member]):
            out.append(f"{member}: {kind(answered[member])}, not {kind(value)}")
    return sorted(out)


LISTINGS = [
    ("nova-servers-details-v2.47.json", "servers", "/compute/v2.1/servers/detail?all_tenants=1", NOVA_2_47),
    ("nova-servers-details-v2.1.json", "servers", "/compute/v2.1/servers/detail?all_tenants=1", {}),
    ("nova-flavors-detail-v2.1.json", "flavors", "/compute/v2.1/flavors/detail?is_public=None", {}),
    ("cinder-volumes-detail-v3.0.json", "volumes", "/volume/v3/{project}/volumes/detail?all_tenants=1", {}),
    ("cinder-types-v3.0.json", "volume_types", "/volume/v3/{project}/types?is_public=None", {}),
    ("neutron-floatingips.json", "floatingips", "/network/v2.0/floatingips", {}),
    ("glance-images.json", "images", "/image/v2/images?visibility=all", {}),
    ("octavia-loadbalancers.json", "loadbalancers", "/load-balancer/v2/lbaas/loadbalancers", {}),
]


@pytest.mark.parametrize(("name", "key", "path", "headers"), LISTINGS, ids=[c[0] for c in LISTINGS])
async def test_listing_items_carry_every_member_of_the_sample(
    fake: Fake, name: str, key: str, path: str, headers: dict[str, str]
) -> None:
    token = await fake.token()
    answer = await fake.get(path.format(project=fake.state.accounts.admin.project_id), token, headers=headers)
    assert answer.status_code == 200, answer.text
    items = answer.json()[key]
    assert items
    for expected in sample(name)[key]:
        # Some of nova's members depend on the status (progress, fault): compared at the sample's.
        alike = [i for i in items if key != "servers" or i["status"] == expected["status"]]
        assert alike, (name, expected.get("status"))
        for item in alike:
            assert departures(expected, item) == [], (name, item.get("id"))


@pytest.mark.parametrize(
    ("name", "path", "member"),
    [
        ("nova-version-v2.1.json", "/compute/v2.1/", "version"),
        ("nova-versions.json", "/compute/", "versions"),
        ("cinder-version-v3.json", "/volume/v3/", "versions"),
    ],
)
async def test_version_documents_are_served_without_a_token(
    fake: Fake, name: str, path: str, member: str
) -> None:
    answer = await fake.get(path)
    assert answer.status_code in (200, 300), answer.text
    body = answer.json()
    expected = sample(name)[member]
    if isinstance(expected, list):
        assert len(body[member]) == len(expected)
        for want, got in zip(expected, body[member], strict=True):
            assert departures({k: v for k, v in want.items() if k != "links"}, got) == []
            assert got["id"] == want["id"] and got["status"] == want["status"]
    else:
        assert departures(expected, body[member]) == []
        assert (body[member]["id"], body[member]["status"]) == (expected["id"], expected["status"])
