"""A queued image against a sync, over HTTP on SQLite and PostgreSQL: the sync sees what the collector
books (docs/reconciliation.md, "When an image starts"): the image from glance's create, at size 0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from reconcile_support import T0, Harness, builder, collector_event, events_of, minutes, open_harness

from tally.core import parse_instant
from tally.reconcile import Status
from tally.simulator import Resource, WorldBuilder, WorldProject
from tally.store import Store

pytestmark = pytest.mark.anyio


def _queued_world() -> tuple[WorldBuilder, WorldProject, Resource]:
    b = builder()
    p = b.project("alpha")
    image = b.image(p, size_bytes=None, created_at=T0 + minutes(5), transition="queued")
    image.change(T0 + minutes(8), size_bytes=3 * 2**30)
    return b, p, image.build()


def _queued_create(h: Harness, p: WorldProject, image: Resource) -> dict[str, Any]:
    """The collector's create of the queued image, at size 0."""
    return collector_event(
        h, "image", image.resource_id, "image.create", T0 + minutes(5), project_id=p.id, size={"size_gb": 0}
    )


async def test_a_queued_image_the_collector_missed_is_created_at_its_creation_at_size_0(
    store: Store, tmp_path: Path
) -> None:
    b, _, image = _queued_world()
    async with open_harness(b.build(), store, tmp_path) as h:
        outcome = await h.sync(T0 + minutes(6))
        assert outcome.status is Status.COMPLETED and outcome.stats["deferred"]["transitional"] == 0
        (event,) = await events_of(h, "image", image.resource_id)
        assert event["event_type"] == "sync.create"
        assert parse_instant(event["timestamp"]) == T0 + minutes(5)
        assert event["payload"]["state"] == "active" and event["payload"]["size"] == {"size_gb": 0}


async def test_a_queued_image_the_collector_booked_needs_no_correction(store: Store, tmp_path: Path) -> None:
    b, p, image = _queued_world()
    async with open_harness(b.build(), store, tmp_path) as h:
        create = _queued_create(h, p, image)
        await h.pipeline.ingest([create])
        await h.sync(T0 + minutes(6))
        assert [e["event_type"] for e in await events_of(h, "image", image.resource_id)] == ["image.create"]


async def test_a_missed_upload_is_a_size_change_at_the_poll(store: Store, tmp_path: Path) -> None:
    b, p, image = _queued_world()
    async with open_harness(b.build(), store, tmp_path) as h:
        create = _queued_create(h, p, image)
        await h.pipeline.ingest([create])
        poll = T0 + minutes(60)
        await h.sync(poll)
        events = await events_of(h, "image", image.resource_id)
        assert [e["event_type"] for e in events] == ["image.create", "sync.update"]
        assert parse_instant(events[1]["timestamp"]) == poll
        assert events[1]["payload"]["size"] == {"size_gb": 3}
