"""A store holding a known month for the rating tests: an instance resized, stopped and shelved, a volume."""

from __future__ import annotations

from typing import Any

from tally.core import Event, parse_event, parse_instant
from tally.store import open_store

SMALL = {"vcpus": 2, "ram_gb": 4, "disk_gb": 20, "flavor": "m1.small"}
ODD = {"vcpus": 4, "ram_gb": 8, "disk_gb": 20, "flavor": "odd.4"}


def ev(
    n: int,
    rid: str,
    event_type: str,
    at: str,
    *,
    rtype: str = "instance",
    project: str = "p-1",
    **payload: Any,
) -> Event:
    return parse_event(
        {
            "event_id": f"ev-{n}",
            "timestamp": at,
            "event_type": event_type,
            "platform": "openstack",
            "cloud": "os-dev",
            "resource_type": rtype,
            "resource_id": rid,
            "project_id": project,
            "payload": payload,
        }
    )


def known_month() -> list[Event]:
    """vm-1: m1.small 10 h, resized to an unpriced flavor (priced by its parts) 10 h, stopped 2 h,
    shelved 2 h, deleted; vol-1: 100 GB ssd for the whole day of March 1st, then deleted."""
    return [
        ev(1, "vm-1", "compute.instance.create.end", "2026-03-01T00:00:00Z", state="active", size=SMALL),
        ev(
            2, "vm-1", "compute.instance.resize.confirm.end", "2026-03-01T10:00:00Z", state="active", size=ODD
        ),
        ev(3, "vm-1", "compute.instance.update", "2026-03-01T20:00:00Z", state="shutoff", size=ODD),
        ev(4, "vm-1", "compute.instance.update", "2026-03-01T22:00:00Z", state="shelved", size=ODD),
        ev(5, "vm-1", "compute.instance.delete.end", "2026-03-02T00:00:00Z"),
        ev(
            6,
            "vol-1",
            "volume.create.end",
            "2026-03-01T00:00:00Z",
            rtype="volume",
            project="p-2",
            state="available",
            size={"size_gb": 100, "type": "ssd"},
        ),
        ev(7, "vol-1", "volume.delete.end", "2026-03-02T00:00:00Z", rtype="volume", project="p-2"),
    ]


async def seed_store(url: str, events: list[Event] | None = None) -> None:
    async with open_store(url) as store:
        await store.migrate_up()
        await store.write_batch(known_month() if events is None else events)


async def seed_accounts(url: str) -> None:
    """p-1 is billed to account acme until March 1st 12:00, then to account globex; p-2 has no account."""
    async with open_store(url) as store:
        p1 = await store.create_project(platform="openstack", cloud="os-dev", external_id="p-1", name="web")
        acme = await store.create_project(platform="meta", cloud="meta", external_id="acme", name="ACME Corp")
        globex = await store.create_project(
            platform="meta", cloud="meta", external_id="globex", name="Globex"
        )
        moved = parse_instant("2026-03-01T12:00:00Z")
        first = await store.create_relation(
            source_id=p1.id,
            target_id=acme.id,
            relation_type="billing_account",
            valid_from=parse_instant("2026-01-01T00:00:00Z"),
        )
        await store.end_relation(first.id, moved)
        await store.create_relation(
            source_id=p1.id, target_id=globex.id, relation_type="billing_account", valid_from=moved
        )
