"""A cloud that does not run a service: switched off in adapter_config, the run completes, the bound
moves and the deleted-servers listing dates a lost instance delete at nova's terminated_at; expected
but missing from the catalog, the service's type is an enumeration error, as any failing listing.

Every optional service is one case of the class (cinder, glance, neutron, octavia), against the
fake over HTTP with the service left out of its catalog and its paths answering 404."""

from __future__ import annotations

from pathlib import Path

import pytest
from reconcile_support import T0, Harness, builder, collector_event, events_of, minutes, open_harness

from tally.core import parse_instant
from tally.openstack.internals import parse_adapter_config
from tally.reconcile import Status
from tally.simulator.world import World
from tally.store import Store

pytestmark = pytest.mark.anyio

# switch, the catalog type of the service, the resource type it lists
SERVICES = [
    ("include_cinder", "block-storage", "volume"),
    ("include_glance", "image", "image"),
    ("include_neutron", "network", "floating_ip"),
    ("include_octavia", "load-balancer", "loadbalancer"),
]
GONE = T0 + minutes(75)


def world() -> tuple[World, str, str]:
    """An instance the bus saw created, deleted at T0+75 min with its delete.end lost; and one resource
    of every optional type, so a service's listing has something to name."""
    b = builder()
    p = b.project("alpha")
    f = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    vm = b.instance(p, f, created_at=T0 + minutes(5)).terminate(GONE).build()
    b.volume(p, b.volume_type("ssd"), size_gb=10, created_at=T0 + minutes(6))
    b.floating_ip(p, address="203.0.113.7", created_at=T0 + minutes(7))
    b.image(p, size_bytes=2**30, created_at=T0 + minutes(8))
    b.loadbalancer(p, created_at=T0 + minutes(9))
    return b.build(), vm.resource_id, p.id


def without(service: str):  # type: ignore[no-untyped-def]
    def prepare(state) -> None:  # type: ignore[no-untyped-def]
        state.faults.absent = {service}

    return prepare


async def _deleted_lost(h: Harness, vm_id: str, project_id: str) -> None:
    create = collector_event(
        h,
        "instance",
        vm_id,
        "compute.instance.create.end",
        T0 + minutes(5),
        project_id=project_id,
        size={"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"},
    )
    result = await h.pipeline.ingest([create])
    assert result.accepted == 1


@pytest.mark.parametrize(("switch", "service", "resource_type"), SERVICES)
async def test_a_service_switched_off_leaves_its_type_alone_and_runs_complete(
    store: Store, tmp_path: Path, switch: str, service: str, resource_type: str
) -> None:
    w, vm_id, project_id = world()
    async with open_harness(w, store, tmp_path, prepare=without(service)) as h:
        config = {key: True for key, _, _ in SERVICES} | {switch: False}
        entry = h.entry_for("admin", **config)
        await _deleted_lost(h, vm_id, project_id)
        first = await h.sync(T0 + minutes(60), entry=entry)
        assert first.status is Status.COMPLETED, first.stats["errors"]
        rows = await h.rows()
        assert not any(t == resource_type for t, _ in rows), (
            "the type of a service switched off is not listed"
        )
        others = {t for _, _, t in SERVICES} - {resource_type}
        assert others <= {t for t, _ in rows}
        # The first run completed, so the second reads nova's deleted servers from its start: the lost
        # delete is dated at terminated_at, not at this poll.
        second = await h.sync(T0 + minutes(120), entry=entry)
        assert second.status is Status.COMPLETED, second.stats["errors"]
        delete = (await events_of(h, "instance", vm_id))[-1]
        assert delete["event_type"] == "sync.delete"
        assert parse_instant(delete["timestamp"]) == GONE


@pytest.mark.parametrize(("switch", "service", "resource_type"), SERVICES)
async def test_a_service_expected_but_missing_is_an_enumeration_error(
    store: Store, tmp_path: Path, switch: str, service: str, resource_type: str
) -> None:
    w, vm_id, project_id = world()
    async with open_harness(w, store, tmp_path, prepare=without(service)) as h:
        entry = h.entry_for("admin", **{key: True for key, _, _ in SERVICES})
        await _deleted_lost(h, vm_id, project_id)
        outcome = await h.sync(T0 + minutes(60), entry=entry)
        assert outcome.status is Status.FAILED
        errors = outcome.stats["errors"]
        assert any(e.startswith(f"enumerating {resource_type}: ") and service in e for e in errors), errors
        # The other types were booked all the same.
        assert {t for t, _ in await h.rows()} >= {t for _, _, t in SERVICES} - {resource_type}


async def test_without_cinder_no_volume_type_is_asked_for(store: Store, tmp_path: Path) -> None:
    w, _, _ = world()
    async with open_harness(w, store, tmp_path, prepare=without("block-storage")) as h:
        outcome = await h.sync(T0 + minutes(60), entry=h.entry_for("admin", include_cinder=False))
        assert outcome.status is Status.COMPLETED, outcome.stats["errors"]
        assert await h.store.size_names(h.cloud) == []
        assert not any("size names" in e for e in outcome.stats["errors"])


@pytest.mark.parametrize(("switch", "service", "resource_type"), SERVICES)
def test_each_switch_decides_its_type_and_is_named_when_wrong(
    switch: str, service: str, resource_type: str
) -> None:
    with pytest.raises(ValueError, match=f'"{switch}" must be true or false'):
        parse_adapter_config({"os_cloud": "x", switch: "no"})
    on = parse_adapter_config({"os_cloud": "x", switch: True})
    off = parse_adapter_config({"os_cloud": "x", switch: False})
    assert resource_type in on.resource_types and on.includes(service)
    assert resource_type not in off.resource_types and not off.includes(service)
    assert on.resource_types - off.resource_types == {resource_type}


def test_defaults_list_what_the_seed_lists() -> None:
    # Seed 000: instances, volumes, floating IPs and images always; load balancers with include_octavia.
    defaults = parse_adapter_config({"os_cloud": "x"})
    assert defaults.resource_types == {"instance", "volume", "floating_ip", "image"}
    assert defaults.includes("compute") and not defaults.includes("load-balancer")
