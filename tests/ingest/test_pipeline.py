"""The ingest pipeline as a client sees it: the answer, the stored rows, the dead letters, the metrics."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import anyio
import pytest
from prometheus_client import REGISTRY

from tally.core import ResourceKey
from tally.ingest import (
    BatchTooLarge,
    IngestPipeline,
    IngestScope,
    SizeSchemaInvalid,
    keep_current_resources_fresh,
)
from tally.ingest.internals import SCOPE_VIOLATION, refresh_current_resources
from tally.store import EventFilter, SizeName, Store, open_store

pytestmark = pytest.mark.anyio

KEY = ResourceKey("os-dev", "instance", "vm-1")


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_good_batch_is_accepted_and_folded(store: Store, make_wire: Any) -> None:
    pipeline = IngestPipeline(store, require_size_schema=False)
    labels = {
        "platform": "openstack",
        "cloud": "os-dev",
        "resource_type": "instance",
        "event_type": "compute.instance.create.end",
        "source": "collector",
    }
    before = sample("tally_events_ingested_total", **labels)
    result = await pipeline.ingest(
        [make_wire("a"), make_wire("b", "compute.instance.delete.end", "2026-03-01T11:00:00Z", payload={})]
    )
    assert result.to_json() == {"accepted": 2, "duplicates": 0, "rejected": []}
    assert sample("tally_events_ingested_total", **labels) == before + 1
    row = await store.get_resource(KEY)
    assert row is not None and row.state == "deleted"


async def test_duplicates_are_counted(store: Store, make_wire: Any) -> None:
    pipeline = IngestPipeline(store, require_size_schema=False)
    before = sample("tally_events_deduplicated_total", cloud="os-dev")
    await pipeline.ingest([make_wire("a")])
    result = await pipeline.ingest([make_wire("a"), make_wire("a")])
    assert (result.accepted, result.duplicates) == (0, 2)
    assert sample("tally_events_deduplicated_total", cloud="os-dev") == before + 2


async def test_bad_items_are_refused_by_member_and_the_rest_is_kept(store: Store, make_wire: Any) -> None:
    pipeline = IngestPipeline(store, require_size_schema=False)
    before = sample("tally_events_rejected_total", cloud="unknown", reason="schema")
    items = [
        make_wire("nul", resource_id="vm\x00x"),
        make_wire("long", resource_id="v" * 513),
        {**make_wire("unknown"), "colour": "blue"},
        make_wire("ok"),
        make_wire("badtype", event_type="Compute.Instance"),
        "not an object",
        make_wire("nostate", event_type="compute.instance.update", payload={}),
    ]
    result = await pipeline.ingest(items)
    reasons = {r.index: r.reason for r in result.rejected}
    assert result.accepted == 1
    assert reasons[0] == "schema: the event contains a NUL character"
    assert reasons[1] == "schema: resource_id is longer than 512 characters"
    assert reasons[2] == "schema: unknown member colour"
    assert reasons[4].startswith("schema: event_type 'Compute.Instance' does not match")
    assert reasons[5] == "schema: an event must be a JSON object"
    assert reasons[6] == "schema: payload.state is required on update"
    assert [r.event_id for r in result.rejected][:3] == ["nul", "long", "unknown"]
    assert sample("tally_events_rejected_total", cloud="unknown", reason="schema") == before + 6
    dead = (await store.list_rejected(limit=100)).items
    assert len(dead) == 6
    nul = next(d for d in dead if isinstance(d.raw, dict) and d.raw.get("event_id") == "nul")
    assert nul.raw["resource_id"] == "vm\\u0000x"
    assert (await store.get_resource(KEY)) is not None


async def test_reused_event_id_with_another_timestamp_is_stored_twice(store: Store, make_wire: Any) -> None:
    pipeline = IngestPipeline(store, require_size_schema=False)
    await pipeline.ingest([make_wire("same")])
    result = await pipeline.ingest(
        [make_wire("same", "compute.instance.update", "2026-03-01T12:00:00Z", payload={"state": "paused"})]
    )
    assert (result.accepted, result.duplicates) == (1, 0)
    assert len(await store.lifecycle_events(KEY)) == 2


async def test_size_failing_its_schema_is_refused(store: Store, make_wire: Any) -> None:
    pipeline = IngestPipeline(store, require_size_schema=False)
    bad = make_wire(
        "bad", payload={"state": "active", "size": {**{"vcpus": 0}, "ram_gb": 1, "disk_gb": 0, "flavor": "x"}}
    )
    missing = make_wire("missing", resource_id="vm-2", payload={"state": "active", "size": {"vcpus": 1}})
    result = await pipeline.ingest([bad, missing, make_wire("good", resource_id="vm-3")])
    reasons = [r.reason for r in result.rejected]
    assert reasons[0] == "size_schema: size.vcpus: 0 is less than the minimum of 1"
    assert reasons[1].startswith("size_schema: size: 'ram_gb' is a required property")
    assert result.accepted == 1


async def test_unregistered_pair_strict_and_lax(store: Store, make_wire: Any) -> None:
    item = make_wire("w", resource_type="widget", payload={"state": "on", "size": {"gb": 1}})
    strict = IngestPipeline(store, require_size_schema=True)
    refused = await strict.ingest([item])
    assert refused.accepted == 0
    assert refused.rejected[0].reason == "size_schema: no size schema is registered for (openstack, widget)"
    lax = IngestPipeline(store, require_size_schema=False)
    # An unregistered type is not a label value of its own (the sender chooses it): it counts as other.
    before = sample("tally_ingest_unvalidated_size_total", platform="openstack", resource_type="other")
    assert (await lax.ingest([item])).accepted == 1
    assert (
        sample("tally_ingest_unvalidated_size_total", platform="openstack", resource_type="other")
        == before + 1
    )


async def test_registered_schema_is_enforced_in_lax_mode_after_a_put(store: Store, make_wire: Any) -> None:
    pipeline = IngestPipeline(store, require_size_schema=False)
    first = make_wire("w1", resource_type="widget", payload={"state": "on", "size": {"gb": "lots"}})
    assert (await pipeline.ingest([first])).accepted == 1
    await pipeline.put_resource_type(
        "openstack", "widget", {"type": "object", "properties": {"gb": {"type": "integer"}}}
    )
    second = make_wire(
        "w2", resource_type="widget", resource_id="w-2", payload={"state": "on", "size": {"gb": "lots"}}
    )
    result = await pipeline.ingest([second])
    assert result.rejected[0].reason == "size_schema: size.gb: 'lots' is not of type 'integer'"
    with pytest.raises(SizeSchemaInvalid, match="size_schema at"):
        await pipeline.put_resource_type("openstack", "widget", {"type": "nonsense"})


async def test_scope_violation_is_audited_not_dead_lettered(store: Store, make_wire: Any) -> None:
    pipeline = IngestPipeline(store, require_size_schema=False)
    scope = IngestScope("openstack", "os-dev", actor="credential:1")
    before = sample("tally_events_rejected_total", cloud="os-dev", reason="scope")
    result = await pipeline.ingest([make_wire("in"), make_wire("out", cloud="os-prod")], scope=scope)
    assert result.accepted == 1
    assert [r.to_json() for r in result.rejected] == [{"index": 1, "event_id": "out", "reason": "scope"}]
    assert (await store.list_rejected()).items == []
    audit = await store.list_audit(action=SCOPE_VIOLATION)
    assert [(a.actor, a.object_id, a.details["cloud"]) for a in audit] == [("credential:1", "out", "os-prod")]
    assert sample("tally_events_rejected_total", cloud="os-dev", reason="scope") == before + 1


SSD = SizeName("os-dev", "volume", "type", "9f1c-id", "ssd")


def _volume_typed_by_id(make_wire: Any, **payload: Any) -> dict[str, Any]:
    """A volume create whose size names its type by the id that SSD names "ssd"."""
    return make_wire(
        "v",
        "volume.create.end",
        resource_type="volume",
        resource_id="vol-1",
        payload={"state": "available", "size": {"size_gb": 10, "type": "9f1c-id"}, **payload},
    )


async def test_size_names_replace_ids_and_keep_the_original(store: Store, make_wire: Any) -> None:
    await store.learn_size_names("os-dev", [SSD])
    pipeline = IngestPipeline(store, require_size_schema=True)
    item = _volume_typed_by_id(make_wire, provider={"o": 1})
    assert (await pipeline.ingest([item])).accepted == 1
    stored = (await store.list_events(EventFilter(resource_type="volume"))).items[0].event
    assert stored.payload["size"] == {"size_gb": 10, "type": "ssd"}
    assert stored.payload["provider"] == {"o": 1, "size_as_reported": {"type": "9f1c-id"}}
    row = await store.get_resource(ResourceKey("os-dev", "volume", "vol-1"))
    assert row is not None and row.size["type"] == "ssd"


async def test_a_store_of_one_connection_ingests_sized_events_of_a_scope(
    request: pytest.FixtureRequest, make_wire: Any
) -> None:
    """The batch's transaction opens before validation, so what validation looks up (size names,
    schemas) must be read first: with one connection, a lookup inside would wait for ever."""
    async with open_store(request.getfixturevalue("pg_schema_url"), max_conns=1) as store:
        await store.migrate_up()
        await store.learn_size_names("os-dev", [SSD])
        pipeline = IngestPipeline(store, require_size_schema=True)
        volume = _volume_typed_by_id(make_wire)
        outside = make_wire("o", cloud="os-other", resource_id="vm-9")
        with anyio.fail_after(10):
            result = await pipeline.ingest(
                [make_wire("a"), volume, outside], scope=IngestScope("openstack", "os-dev")
            )
        assert (result.accepted, [r.reason for r in result.rejected]) == (2, ["scope"])
        row = await store.get_resource(ResourceKey("os-dev", "volume", "vol-1"))
        assert row is not None and row.size["type"] == "ssd"


async def test_batch_over_1000_stores_nothing(store: Store, make_wire: Any) -> None:
    pipeline = IngestPipeline(store, require_size_schema=False)
    with pytest.raises(BatchTooLarge, match="at most 1000 events, got 1001"):
        await pipeline.ingest([make_wire(f"e{i}", resource_id=f"vm-{i}") for i in range(1001)])
    assert (await store.list_events(EventFilter())).items == []


async def test_oversized_item_is_dead_lettered_by_size(store: Store, make_wire: Any) -> None:
    pipeline = IngestPipeline(store, require_size_schema=False)
    huge = make_wire("huge", **{"colour": "x" * 70_000})
    result = await pipeline.ingest([huge])
    # The size is checked before the members: a huge item is not parsed at all.
    assert result.rejected[0].reason.startswith("schema: the event is 70")
    assert result.rejected[0].reason.endswith("more than the 65536 an event may hold")
    raw = (await store.list_rejected()).items[0].raw
    assert set(raw) == {"not_stored"} and raw["not_stored"]["bytes"] > 64 * 1024


async def test_source_is_stamped_by_the_pipeline(store: Store, make_wire: Any) -> None:
    pipeline = IngestPipeline(store, require_size_schema=False)
    await pipeline.ingest([make_wire("a", source="reconciliation")], source="collector")
    await pipeline.ingest([make_wire("b", resource_id="vm-2")], source="reconciliation")
    bad = await pipeline.ingest([make_wire("c", resource_id="vm-3", source="engine")])
    assert bad.rejected[0].reason.startswith("schema: source must be one of")
    stored = {s.event.event_id: s.event.source for s in (await store.list_events(EventFilter())).items}
    assert stored == {"a": "collector", "b": "reconciliation"}


async def test_late_event_counts_a_replay(store: Store, make_wire: Any) -> None:
    pipeline = IngestPipeline(store, require_size_schema=False)
    before = sample("tally_projection_replays_total", cloud="os-dev")
    await pipeline.ingest(
        [
            make_wire("c"),
            make_wire("u", "compute.instance.update", "2026-03-01T12:00:00Z", payload={"state": "paused"}),
        ]
    )
    await pipeline.ingest(
        [make_wire("l", "compute.instance.update", "2026-03-01T11:00:00Z", payload={"state": "shutoff"})]
    )
    assert sample("tally_projection_replays_total", cloud="os-dev") == before + 1
    row = await store.get_resource(KEY)
    assert row is not None and row.state == "paused"


async def test_current_resources_gauge_is_refreshed(store: Store, make_wire: Any) -> None:
    pipeline = IngestPipeline(store, require_size_schema=False)
    await pipeline.ingest([make_wire("a"), make_wire("b", resource_id="vm-2")])
    await refresh_current_resources(store)
    labels = {"platform": "openstack", "cloud": "os-dev", "resource_type": "instance", "state": "active"}
    assert sample("tally_current_resources", **labels) == 2


async def test_gauge_refresher_runs_until_cancelled(store: Store, make_wire: Any) -> None:
    pipeline = IngestPipeline(store, require_size_schema=False)
    await pipeline.ingest([make_wire("a", resource_id="vm-9", cloud="os-gauge")])
    labels = {"platform": "openstack", "cloud": "os-gauge", "resource_type": "instance", "state": "active"}
    with anyio.move_on_after(0.5):
        await keep_current_resources_fresh(store, 0.1)
    assert sample("tally_current_resources", **labels) == 1


class _Unreadable(Mapping[str, Any]):
    """An in-process item whose every read raises: what a broken caller could hand the pipeline."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("unreadable")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("unreadable")

    def __len__(self) -> int:
        raise RuntimeError("unreadable")


async def test_an_item_failing_in_any_way_is_refused_and_the_rest_is_kept(
    store: Store, make_wire: Any
) -> None:
    pipeline = IngestPipeline(store, require_size_schema=False)
    calendar_edge = make_wire("edge", timestamp="0001-01-01T00:00:00+01:00")
    result = await pipeline.ingest([make_wire("ok"), calendar_edge, _Unreadable()])
    assert result.accepted == 1
    reasons = {r.index: r.reason for r in result.rejected}
    assert reasons[1].startswith("schema: timestamp")
    assert reasons[2] == "schema: the event could not be read (RuntimeError: unreadable)"
    dead = (await store.list_rejected(limit=100)).items
    assert sorted(d.reason for d in dead) == sorted(reasons.values())
    assert (await store.get_resource(KEY)) is not None
