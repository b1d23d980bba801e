"""write_batch over mixed batches: several keys, new events, repeats of stored ones and late arrivals in one
batch give the rows a fold of the whole history at once gives (on both backends: PostgreSQL folds while it
inserts and redoes the fold when the insert finds duplicates)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tally.core import Event, StoredEvent, project
from tally.store import Store

pytestmark = pytest.mark.anyio

BASE = datetime(2026, 3, 1, tzinfo=UTC)
TYPES = ("compute.instance.create.end", "compute.instance.update", "compute.instance.delete.end")
_examples = itertools.count()


def _event(run: int, serial: int, resource: int, minute: int, kind: int) -> Event:
    event_type = TYPES[kind]
    payload: dict[str, object] = {}
    if kind != 2:
        payload["state"] = ("active", "shutoff", "paused")[serial % 3]
    if kind == 0 or serial % 4 == 0:
        payload["size"] = {"vcpus": 1 + serial % 3}
    return Event(
        event_id=f"e-{run}-{serial}",
        timestamp=BASE + timedelta(minutes=minute),
        event_type=event_type,
        platform="openstack",
        cloud="os-dev",
        resource_type="instance",
        resource_id=f"vm-{run}-{resource}",
        project_id=f"p-{serial % 2}",
        payload=payload,
    )


@st.composite
def deliveries(draw: st.DrawFn) -> tuple[list[Event], list[list[Event]]]:
    """Distinct events of up to three resources (distinct instants), sent shuffled, some repeated, in
    batches."""
    run = next(_examples)
    specs = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=1, max_size=12))
    minutes = draw(st.lists(st.integers(0, 10_000), min_size=len(specs), max_size=len(specs), unique=True))
    history = [
        _event(run, serial, resource, minute, kind)
        for serial, ((resource, kind), minute) in enumerate(zip(specs, minutes, strict=True))
    ]
    repeats = draw(st.lists(st.sampled_from(history), max_size=5))
    sent = draw(st.permutations(history + repeats))
    cuts = sorted(draw(st.lists(st.integers(0, len(sent)), max_size=3)))
    return history, [sent[a:b] for a, b in zip([0, *cuts], [*cuts, len(sent)], strict=True) if b > a]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=deliveries())
async def test_mixed_batches_fold_like_the_whole_history(
    store: Store, case: tuple[list[Event], list[list[Event]]]
) -> None:
    history, batches = case
    inserted = duplicates = 0
    for batch in batches:
        outcome = await store.write_batch(batch)
        inserted += len(outcome.inserted)
        duplicates += len(outcome.duplicates)
    assert inserted == len(history)
    assert duplicates == sum(len(b) for b in batches) - len(history)
    keys = {e.key for e in history}
    for key in keys:
        expected = project(StoredEvent(e, BASE) for e in history if e.key == key)
        assert await store.get_resource(key) == expected
