"""A hidden image (glance's ``os_hidden``) against the fake glance over HTTP: left out of the default
listing, it exists all the same, so a run lists it on its own and never books it deleted."""

from __future__ import annotations

from pathlib import Path

import pytest
from reconcile_support import T0, builder, collector_event, events_of, minutes, open_harness

from tally.reconcile import Status
from tally.store import Store

pytestmark = pytest.mark.anyio

GIB = 2**30


def world():  # type: ignore[no-untyped-def]
    b = builder()
    p = b.project("alpha")
    shown = b.image(p, size_bytes=GIB, created_at=T0 + minutes(5))
    hidden = b.image(p, size_bytes=2 * GIB, created_at=T0 + minutes(6))
    hidden.hidden = True
    return b.build(), p, shown.build(), hidden.build()


async def test_a_hidden_image_the_bus_reported_is_never_deleted(store: Store, tmp_path: Path) -> None:
    w, p, shown, hidden = world()
    async with open_harness(w, store, tmp_path) as h:
        await h.pipeline.ingest(
            [
                collector_event(
                    h, "image", image.resource_id, "image.upload", at, project_id=p.id, size={"size_gb": gib}
                )
                for image, at, gib in ((shown, T0 + minutes(5), 1), (hidden, T0 + minutes(6), 2))
            ]
        )
        # The first run has no earlier one to prove an absence with; the second would book it deleted.
        for at in (T0 + minutes(60), T0 + minutes(120)):
            outcome = await h.sync(at)
            assert outcome.status is Status.COMPLETED
            assert (outcome.stats["created"], outcome.stats["updated"], outcome.stats["deleted"]) == (0, 0, 0)
        assert (await h.rows())[("image", hidden.resource_id)].is_live


async def test_a_hidden_image_the_record_never_held_is_created(store: Store, tmp_path: Path) -> None:
    w, p, _, hidden = world()
    async with open_harness(w, store, tmp_path) as h:
        outcome = await h.sync(T0 + minutes(60))
        assert outcome.stats["created"] == 2
        (create,) = await events_of(h, "image", hidden.resource_id)
        assert create["event_type"] == "sync.create" and create["payload"]["size"] == {"size_gb": 2}
        assert create["project_id"] == p.id
