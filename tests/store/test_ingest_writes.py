"""write_batch: events stored once, duplicates counted, the projection folded in the same transaction."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from tally.core import ResourceKey, lifecycle, project, utc_now
from tally.core.internals import DELETED
from tally.store import AuditEntry, DeadLetter, Store

pytestmark = pytest.mark.anyio

KEY = ResourceKey("os-dev", "instance", "vm-1")


async def test_new_events_are_stored_and_folded(store: Store, make_event) -> None:
    create = make_event("compute.instance.create.end", "2026-03-01T10:00:00Z")
    stop = make_event("compute.instance.power_off.end", "2026-03-01T11:00:00Z", state="shutoff")
    outcome = await store.write_batch([stop, create])
    assert {e.event_id for e in outcome.inserted} == {create.event_id, stop.event_id}
    assert outcome.duplicates == () and outcome.replayed == ()
    row = await store.get_resource(KEY)
    assert row is not None
    assert (row.state, row.created_at, row.deleted_at) == ("shutoff", create.timestamp, None)
    assert row.size == {"vcpus": 1, "ram_gb": 2, "disk_gb": 10, "flavor": "m1.small"}
    assert row.first_event_at == create.timestamp and row.last_event_type == "compute.instance.power_off.end"
    assert row.last_payload == {"state": "shutoff"}


async def test_duplicates_are_counted_not_stored_twice(store: Store, make_event) -> None:
    create = make_event("compute.instance.create.end")
    await store.write_batch([create])
    again = await store.write_batch([create, create])
    assert again.inserted == () and len(again.duplicates) == 2
    assert len(await store.resource_history(KEY)) == 1


async def test_reused_event_id_with_another_timestamp_is_a_separate_event(store: Store, make_event) -> None:
    first = make_event("compute.instance.create.end", "2026-03-01T10:00:00Z", event_id="same")
    second = make_event("compute.instance.update", "2026-03-01T12:00:00Z", event_id="same", state="paused")
    await store.write_batch([first])
    outcome = await store.write_batch([second])
    assert len(outcome.inserted) == 1
    assert [s.event.timestamp for s in await store.resource_history(KEY)] == [
        first.timestamp,
        second.timestamp,
    ]


async def test_late_event_replays_the_history(store: Store, make_event) -> None:
    create = make_event("compute.instance.create.end", "2026-03-01T10:00:00Z")
    late_state = make_event("compute.instance.update", "2026-03-01T12:00:00Z", state="paused")
    await store.write_batch([create, late_state])
    earlier = make_event("compute.instance.update", "2026-03-01T11:00:00Z", state="shutoff")
    outcome = await store.write_batch([earlier])
    assert outcome.replayed == (KEY,)
    row = await store.get_resource(KEY)
    assert row is not None and row.state == "paused"
    assert row == project(await store.resource_history(KEY))


async def test_late_update_never_revives_a_deleted_resource(store: Store, make_event) -> None:
    await store.write_batch(
        [
            make_event("compute.instance.create.end", "2026-03-01T10:00:00Z"),
            make_event("compute.instance.delete.end", "2026-03-01T12:00:00Z"),
        ]
    )
    await store.write_batch([make_event("compute.instance.update", "2026-03-01T13:00:00Z", state="active")])
    row = await store.get_resource(KEY)
    assert row is not None and row.state == DELETED and row.deleted_at is not None
    await store.write_batch([make_event("compute.instance.create.end", "2026-03-01T14:00:00Z")])
    row = await store.get_resource(KEY)
    assert row is not None and row.state == "active" and row.deleted_at is None


async def test_lifecycle_events_fold_to_intervals(store: Store, make_event) -> None:
    await store.write_batch(
        [
            make_event("compute.instance.create.end", "2026-03-01T10:00:00Z"),
            make_event("compute.instance.update", "2026-03-01T11:00:00Z", state="shutoff"),
            make_event("compute.instance.delete.end", "2026-03-01T12:00:00Z"),
        ]
    )
    result = lifecycle(await store.lifecycle_events(KEY))
    assert [(i.state, i.end is not None) for i in result.intervals] == [("active", True), ("shutoff", True)]
    assert result.deleted_at is not None and result.warnings == ()


async def test_dead_letters_and_audit_rows_commit_with_the_batch(store: Store, make_event) -> None:
    before = utc_now() - timedelta(seconds=1)
    await store.write_batch(
        [make_event("compute.instance.create.end")],
        dead_letters=[DeadLetter("schema: event_id is required", {"event_type": "x.y"})],
        audits=[AuditEntry("ingest", "events.scope_violation", "event", "ev-9", {"cloud": "other"})],
    )
    page = await store.list_rejected(start=before)
    assert [(r.reason, r.raw) for r in page.items] == [
        ("schema: event_id is required", {"event_type": "x.y"})
    ]
    audit = await store.list_audit(action="events.scope_violation")
    assert [(a.object_id, a.details) for a in audit] == [("ev-9", {"cloud": "other"})]


async def test_a_failed_batch_stores_nothing(store: Store, make_event) -> None:
    bad_letter = DeadLetter("schema: x", {"v": 1})
    good = make_event("compute.instance.create.end")
    # parse_event refuses a virtual cloud; built directly, the table's CHECK refuses it mid-batch.
    virtual = replace(make_event("compute.instance.create.end", resource_id="vm-2"), cloud="meta")
    with pytest.raises(Exception, match=r"(?i)check|constraint"):
        await store.write_batch([good, virtual], dead_letters=[bad_letter])
    assert await store.resource_history(KEY) == []
    assert (await store.list_rejected()).items == []


async def test_rebuild_replays_the_projection(store: Store, make_event) -> None:
    for i in range(3):
        await store.write_batch([make_event("compute.instance.create.end", resource_id=f"vm-{i}")])
    assert await store.rebuild_projection(cloud="os-dev") == 3
    assert await store.rebuild_projection(cloud="nowhere") == 0
    row = await store.get_resource(ResourceKey("os-dev", "instance", "vm-2"))
    assert row is not None and row.state == "active"


async def test_json_values_round_trip_exactly(store: Store, make_event) -> None:
    big = 2**63 - 1  # the widest integer ingest accepts (issue 14 D5): kept exact, never a float
    payload = {"state": "active", "provider": {"big": big, "pi": 3.25, "text": "é\u2603", "none": None}}
    await store.write_batch([make_event("compute.instance.update", **payload)])
    stored = (await store.resource_history(KEY))[0].event.payload
    assert stored["provider"] == {"big": big, "pi": 3.25, "text": "é\u2603", "none": None}
    row = await store.get_resource(KEY)
    assert row is not None and row.last_payload["provider"]["big"] == big


async def test_concurrent_writers_of_the_same_resources_lose_no_fold(store_url: str, make_event) -> None:
    import anyio

    from tally.store import open_store

    keys = [ResourceKey("os-dev", "instance", f"vm-{i}") for i in range(20)]
    creates = [
        make_event("compute.instance.create.end", "2026-03-01T10:00:00Z", resource_id=k.resource_id)
        for k in keys
    ]
    # Two writers, each with a share of the updates of every resource, minutes interleaved.
    shares: list[list] = [[], []]
    for minute in range(1, 21):
        for k in keys:
            state = "shutoff" if minute % 2 else "active"
            at = f"2026-03-01T11:{minute:02d}:00Z"
            shares[minute % 2].append(
                make_event("compute.instance.update", at, resource_id=k.resource_id, state=state)
            )
    async with open_store(store_url) as one, open_store(store_url) as two:
        await one.migrate_up()
        await one.write_batch(creates)

        async def write(target: Store, events: list) -> None:
            for start in range(0, len(events), 50):
                await target.write_batch(events[start : start + 50])

        async with anyio.create_task_group() as tg:
            tg.start_soon(write, one, shares[0])
            tg.start_soon(write, two, shares[1])
        for key in keys:
            row = await one.get_resource(key)
            assert row == project(await one.resource_history(key))
            assert row is not None and row.state == "active" and row.last_event_at.minute == 20


async def test_awkward_text_survives_the_batch_path(store: Store, make_event) -> None:
    awkward = 'vm "quoted", back\\slash {braces} NULL é'
    event = make_event(
        "compute.instance.create.end",
        resource_id=awkward,
        project_id="NULL",
        state='a"b',
        event_id="id,{1}",
        provider={"ctl": "a\x01b\tc", "quote": 'x"\\y', "big": 2**63 - 1},
    )
    await store.write_batch([event])
    key = ResourceKey("os-dev", "instance", awkward)
    row = await store.get_resource(key)
    assert row is not None and (row.project_id, row.state, row.last_event_id) == ("NULL", 'a"b', "id,{1}")
    assert [s.event for s in await store.resource_history(key)] == [event]


async def test_an_opened_batch_takes_events_in_chunks_and_keys_it_was_not_told_of(
    store: Store, make_event
) -> None:
    stored_before = make_event("compute.instance.create.end", "2026-03-01T09:00:00Z", resource_id="vm-3")
    await store.write_batch([stored_before])
    told = make_event("compute.instance.create.end", "2026-03-01T10:00:00Z")
    untold = make_event("compute.instance.create.end", "2026-03-01T10:00:00Z", resource_id="vm-2")
    late = make_event("compute.instance.update", "2026-03-01T08:00:00Z", resource_id="vm-3", state="paused")
    refused_key = ResourceKey("os-dev", "instance", "named-but-refused")
    async with store.open_batch([KEY, refused_key, late.key]) as batch:
        await batch.add([told, stored_before])
        await batch.add([untold, told, late])
        outcome = await batch.finish(dead_letters=[DeadLetter(reason="schema: x", raw={})])
    assert {e.event_id for e in outcome.inserted} == {told.event_id, untold.event_id, late.event_id}
    assert {e.event_id for e in outcome.duplicates} == {told.event_id, stored_before.event_id}
    assert outcome.replayed == (late.key,)
    for key in (KEY, untold.key):
        row = await store.get_resource(key)
        assert row is not None and row.state == "active"
    assert await store.get_resource(refused_key) is None
    assert len((await store.list_rejected()).items) == 1


async def test_a_batch_left_by_an_error_stores_nothing(store: Store, make_event) -> None:
    create = make_event("compute.instance.create.end")
    with pytest.raises(RuntimeError, match="after the finish"):
        async with store.open_batch([KEY]) as batch:
            await batch.add([create])
            await batch.finish(dead_letters=[DeadLetter(reason="schema: x", raw={})])
            raise RuntimeError("after the finish")
    assert await store.get_resource(KEY) is None
    assert await store.resource_history(KEY) == []
    assert (await store.list_rejected()).items == []
