"""Size names: learnt per cloud and never forgotten, written into the projection rows that still hold
the id, and applied to every read of the record the store folds or bills from; on both backends."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tally.core import ResourceKey, lifecycle
from tally.store import SizeName, Store, UsageScope

pytestmark = pytest.mark.anyio

VOL = ResourceKey("os-dev", "volume", "vol-1")
SSD_ID = "9f1c6a52-7c3d-4d5e-8f00-0000000000a1"
HDD_ID = "9f1c6a52-7c3d-4d5e-8f00-0000000000b2"
MARCH = datetime(2026, 3, 1, tzinfo=UTC)
APRIL = datetime(2026, 4, 1, tzinfo=UTC)


def ssd(cloud: str = "os-dev", name: str = "ssd") -> SizeName:
    return SizeName(cloud, "volume", "type", SSD_ID, name)


async def test_names_are_learnt_per_cloud_and_kept(store: Store) -> None:
    assert await store.learn_size_names("os-dev", [ssd()]) == [ssd()]
    # A later listing without the type (deleted from the cloud) forgets nothing: its id still names
    # the events that carried it.
    hdd = SizeName("os-dev", "volume", "type", HDD_ID, "hdd")
    assert await store.learn_size_names("os-dev", [hdd]) == [hdd]
    assert await store.learn_size_names("os-other", [ssd("os-other", "x")]) == [ssd("os-other", "x")]
    assert [(n.value, n.name) for n in await store.size_names("os-dev")] == [(SSD_ID, "ssd"), (HDD_ID, "hdd")]
    # The same names again are no news; a renamed type is.
    assert await store.learn_size_names("os-dev", [ssd(), hdd]) == []
    assert await store.learn_size_names("os-dev", [ssd(name="fast")]) == [ssd(name="fast")]
    assert dict((n.value, n.name) for n in await store.size_names("os-dev"))[SSD_ID] == "fast"


async def test_a_row_of_another_cloud_is_refused(store: Store) -> None:
    with pytest.raises(Exception, match="os-other"):
        await store.learn_size_names("os-dev", [ssd("os-other")])
    assert await store.size_names("os-dev") == []


async def _volume_stored_with_the_id(store: Store, make_event) -> None:
    await store.write_batch(
        [
            make_event(
                "volume.create.end",
                "2026-03-01T10:00:00Z",
                resource_type="volume",
                resource_id="vol-1",
                state="available",
                size={"size_gb": 10, "type": SSD_ID},
            ),
            make_event(
                "volume.resize.end",
                "2026-03-02T10:00:00Z",
                resource_type="volume",
                resource_id="vol-1",
                state="available",
                size={"size_gb": 20, "type": SSD_ID},
            ),
        ]
    )


async def test_a_name_learnt_later_names_the_projection_and_every_read(store: Store, make_event) -> None:
    await _volume_stored_with_the_id(store, make_event)
    row = await store.get_resource(VOL)
    assert row is not None and row.size["type"] == SSD_ID

    await store.learn_size_names("os-dev", [ssd()])

    row = await store.get_resource(VOL)
    assert row is not None and row.size == {"size_gb": 20, "type": "ssd"}
    [sync_row] = await store.sync_rows("os-dev", "volume")
    assert sync_row.size == {"size_gb": 20, "type": "ssd"}
    history = await store.lifecycle_events(VOL)
    assert [e.event.size for e in history] == [{"size_gb": 10, "type": "ssd"}, {"size_gb": 20, "type": "ssd"}]
    # What cinder said stays beside the name, as at ingest.
    assert all(e.event.payload["provider"]["size_as_reported"] == {"type": SSD_ID} for e in history)
    assert [i.size["type"] for i in lifecycle(history).intervals] == ["ssd", "ssd"]
    [(_, events)] = (await store.histories([VOL])).items()
    assert {e.event.size["type"] for e in events} == {"ssd"}
    page = await store.usage_histories(UsageScope(MARCH, APRIL), limit=10, after=None)
    assert {e.event.size["type"] for _, events in page.items for e in events} == {"ssd"}
    async with store.open_usage_stream(UsageScope(MARCH, APRIL)) as batches:
        facts = [f async for batch in batches for _, history in batch for f in history]
    assert {f[6]["type"] for f in facts} == {"ssd"}


async def test_names_of_one_cloud_name_nothing_of_another(store: Store, make_event) -> None:
    await _volume_stored_with_the_id(store, make_event)
    await store.learn_size_names("os-other", [ssd("os-other", "elsewhere")])
    row = await store.get_resource(VOL)
    assert row is not None and row.size["type"] == SSD_ID
    assert {e.event.size["type"] for e in await store.lifecycle_events(VOL)} == {SSD_ID}
