"""Attached volumes against the fake cinder over HTTP: the collector maps cinder's attach and detach
(its status in the payload), so a run finds the record where cinder lists it and books nothing."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from reconcile_support import T0, Harness, builder, minutes, open_harness

from tally.collector import Mapped, map_notification
from tally.core import Interval, ResourceKey, format_instant, lifecycle
from tally.reconcile import Status
from tally.simulator.world import Resource, WorldProject
from tally.store import Store

pytestmark = pytest.mark.anyio

CREATED = T0 + minutes(5)
ATTACHED = T0 + minutes(20)
DETACHED = T0 + minutes(130)
SIZE = {"size_gb": 50, "type": "ssd"}
# The server it is attached to: a listing of volumes names it, and the volume's facts do not depend on it.
SERVER = "6c8c3a5e-0000-4000-8000-000000000001"


def cinder_notification(
    h: Harness, event_type: str, at: datetime, volume: Resource, project: WorldProject, status: str
) -> bytes:
    """A cinder notification as ``_usage_from_volume`` writes it (the type named, as the simulator does)."""
    payload: dict[str, Any] = {
        "volume_id": volume.resource_id,
        "tenant_id": project.id,
        "user_id": "u1",
        "size": 50,
        "volume_type": "ssd",
        "status": status,
        "display_name": "data",
        "availability_zone": "nova",
        "created_at": CREATED.isoformat(),
        "launched_at": CREATED.isoformat(),
        "volume_attachment": [],
    }
    inner = {
        "message_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{h.cloud}/{event_type}/{volume.resource_id}")),
        "event_type": event_type,
        "publisher_id": "volume.storage-01@lvm",
        "priority": "INFO",
        "timestamp": format_instant(at).replace("T", " ").rstrip("Z"),
        "payload": payload,
    }
    return json.dumps({"oslo.version": "2.0", "oslo.message": json.dumps(inner)}).encode()


async def deliver(h: Harness, *bodies: bytes) -> None:
    events = []
    for body in bodies:
        outcome = map_notification(body, cloud=h.cloud)
        assert isinstance(outcome, Mapped), outcome
        events.append(outcome.event)
    await h.pipeline.ingest(events)


def attached_world(*, detached: bool):  # type: ignore[no-untyped-def]
    b = builder()
    p = b.project("alpha")
    ssd = b.volume_type("ssd")
    vol = b.volume(p, ssd, size_gb=50, created_at=CREATED)
    vol.change(ATTACHED, state="in-use", attached_to=SERVER)
    if detached:
        vol.change(DETACHED, state="available", attached_to=None)
    return b.build(), p, vol.build()


async def created_and_attached(h: Harness, p: WorldProject, vol: Resource) -> None:
    await deliver(
        h,
        cinder_notification(h, "volume.create.end", CREATED, vol, p, "available"),
        cinder_notification(h, "volume.attach.end", ATTACHED, vol, p, "in-use"),
    )


async def test_an_attached_volume_gets_no_correction(store: Store, tmp_path: Path) -> None:
    w, p, vol = attached_world(detached=False)
    async with open_harness(w, store, tmp_path) as h:
        await created_and_attached(h, p, vol)
        outcome = await h.sync(T0 + minutes(60))
        assert outcome.status is Status.COMPLETED
        assert (outcome.stats["created"], outcome.stats["updated"], outcome.stats["deleted"]) == (0, 0, 0)


async def test_a_detach_returns_the_record_to_available_with_no_correction(
    store: Store, tmp_path: Path
) -> None:
    w, p, vol = attached_world(detached=True)
    async with open_harness(w, store, tmp_path) as h:
        await created_and_attached(h, p, vol)
        first = await h.sync(T0 + minutes(60))
        await deliver(h, cinder_notification(h, "volume.detach.end", DETACHED, vol, p, "available"))
        second = await h.sync(T0 + minutes(180))
        for outcome in (first, second):
            assert (outcome.stats["created"], outcome.stats["updated"], outcome.stats["deleted"]) == (0, 0, 0)
        history = await h.store.lifecycle_events(ResourceKey(h.cloud, "volume", vol.resource_id))
        assert lifecycle(history).intervals == (
            Interval(CREATED, ATTACHED, "available", SIZE, p.id),
            Interval(ATTACHED, DETACHED, "in-use", SIZE, p.id),
            Interval(DETACHED, None, "available", SIZE, p.id),
        )
