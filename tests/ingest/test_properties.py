"""Properties of pipeline + store: order, duplication and batch split never change the outcome.

Timestamps within one history are distinct, so the fold order does not depend
on received_at (which differs between batches by design).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tally.core import Category, ResourceKey, StoredEvent, category_of, lifecycle, parse_event, project
from tally.ingest import IngestPipeline
from tally.store import open_store

pytestmark = pytest.mark.anyio

KEY = ResourceKey("os-dev", "instance", "vm-1")
BASE = datetime(2026, 3, 1, tzinfo=UTC)
TYPES = ["compute.instance.create.end", "compute.instance.update", "compute.instance.delete.end"]
SIZES = [
    {"vcpus": 1, "ram_gb": 1, "disk_gb": 0, "flavor": "a"},
    {"vcpus": 2, "ram_gb": 4, "disk_gb": 10, "flavor": "b"},
]


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    minutes = draw(st.lists(st.integers(0, 500), min_size=1, max_size=7, unique=True))
    items = []
    for i, minute in enumerate(minutes):
        event_type = draw(st.sampled_from(TYPES))
        payload: dict[str, Any] = {}
        if category_of(event_type) is not Category.DELETE:
            payload["state"] = draw(st.sampled_from(["active", "shutoff"]))
        if category_of(event_type) is Category.CREATE or draw(st.booleans()):
            payload["size"] = draw(st.sampled_from(SIZES))
        items.append(
            {
                "event_id": f"e{i}",
                "timestamp": (BASE + timedelta(minutes=minute)).isoformat(),
                "event_type": event_type,
                "platform": "openstack",
                "cloud": KEY.cloud,
                "resource_type": KEY.resource_type,
                "resource_id": KEY.resource_id,
                "project_id": draw(st.sampled_from(["p-1", "p-2"])),
                "payload": payload,
            }
        )
    return items


@st.composite
def deliveries(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """A history, then the same events shuffled, some repeated, cut into batches."""
    history = draw(histories())
    repeats = draw(st.lists(st.sampled_from(history), max_size=4))
    sent = draw(st.permutations(history + repeats))
    cuts = sorted(draw(st.lists(st.integers(0, len(sent)), max_size=3)))
    batches = [sent[a:b] for a, b in zip([0, *cuts], [*cuts, len(sent)], strict=True) if b > a]
    return history, batches


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=deliveries())
async def test_any_order_duplication_and_split_gives_the_same_row_and_intervals(
    case: tuple[list[dict[str, Any]], list[list[dict[str, Any]]]],
) -> None:
    history, batches = case
    async with open_store("sqlite:///:memory:") as store:
        await store.migrate_up()
        pipeline = IngestPipeline(store, require_size_schema=True)
        accepted = duplicates = 0
        for batch in batches:
            result = await pipeline.ingest(batch)
            assert result.rejected == []
            accepted += result.accepted
            duplicates += result.duplicates
        assert accepted == len(history)
        assert duplicates == sum(len(b) for b in batches) - len(history)
        at_once = [StoredEvent(parse_event(item), BASE) for item in history]
        row = await store.get_resource(KEY)
        assert row == project(at_once)
        assert lifecycle(await store.lifecycle_events(KEY)) == lifecycle(at_once)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=deliveries())
async def test_only_a_create_after_the_last_delete_revives(
    case: tuple[list[dict[str, Any]], list[list[dict[str, Any]]]],
) -> None:
    history, batches = case
    async with open_store("sqlite:///:memory:") as store:
        await store.migrate_up()
        pipeline = IngestPipeline(store, require_size_schema=True)
        for batch in batches:
            await pipeline.ingest(batch)
        row = await store.get_resource(KEY)
        assert row is not None
        events = sorted((parse_event(i) for i in history), key=lambda e: e.timestamp)
        deletes = [e.timestamp for e in events if e.category is Category.DELETE]
        if not deletes:
            assert row.deleted_at is None
            return
        revived = any(e.category is Category.CREATE and e.timestamp > deletes[-1] for e in events)
        assert (row.deleted_at is None) == revived
        if not revived:
            assert row.state == "deleted"


_examples = iter(range(10**9))


@st.composite
def busy_batches(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """Up to 300 resources of one fresh cloud with one to three events each, shuffled, some repeated,
    cut into batches: enough keys and items to span the pipeline's validation chunks and the
    PostgreSQL store's upsert chunks."""
    rnd = draw(st.randoms(use_true_random=False))
    cloud = f"os-busy-{next(_examples)}"
    history: list[dict[str, Any]] = []
    for r in range(draw(st.integers(1, 300))):
        for i, minute in enumerate(sorted(rnd.sample(range(600), rnd.randint(1, 3)))):
            event_type = "compute.instance.create.end" if i == 0 else rnd.choice(TYPES)
            payload: dict[str, Any] = {}
            if category_of(event_type) is not Category.DELETE:
                payload["state"] = rnd.choice(["active", "shutoff"])
                if category_of(event_type) is Category.CREATE or rnd.random() < 0.3:
                    payload["size"] = rnd.choice(SIZES)
            history.append(
                {
                    "event_id": f"{cloud}-{r}-{i}",
                    "timestamp": (BASE + timedelta(minutes=minute)).isoformat(),
                    "event_type": event_type,
                    "platform": "openstack",
                    "cloud": cloud,
                    "resource_type": "instance",
                    "resource_id": f"vm-{r}",
                    "project_id": "p-1",
                    "payload": payload,
                }
            )
    sent = history + [rnd.choice(history) for _ in range(rnd.randint(0, 20))]
    rnd.shuffle(sent)
    cuts = sorted(rnd.sample(range(len(sent) + 1), rnd.randint(0, 2)))
    batches = [sent[a:b] for a, b in zip([0, *cuts], [*cuts, len(sent)], strict=True) if b > a]
    return history, batches


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=busy_batches())
async def test_busy_batches_fold_every_key_as_its_history_does(
    store: Any, case: tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]
) -> None:
    history, batches = case
    pipeline = IngestPipeline(store, require_size_schema=True)
    accepted = 0
    for batch in batches:
        result = await pipeline.ingest(batch)
        assert result.rejected == []
        accepted += result.accepted
    assert accepted == len(history)
    by_key: dict[ResourceKey, list[StoredEvent]] = {}
    for item in history:
        event = parse_event(item)
        by_key.setdefault(event.key, []).append(StoredEvent(event, BASE))
    for key, events in by_key.items():
        assert await store.get_resource(key) == project(events), key
