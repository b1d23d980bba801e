"""The ingest path's bookkeeping of one batch (``BatchEvents``), pure: no database.

Whatever the order, the repeats and the chunks the events come in, each (event_id, timestamp) is
handed to the store once, in sorted order within a chunk, and every event comes back either inserted
or a duplicate, never both, never lost.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from tally.core import Event
from tally.store._sql_ingest import BatchEvents

AT = datetime(2026, 3, 1, tzinfo=UTC)


def _event(number: int, second: int, resource: int) -> Event:
    return Event(
        event_id=f"ev-{number}",
        timestamp=AT + timedelta(seconds=second),
        event_type="compute.instance.update",
        platform="openstack",
        cloud="c",
        resource_type="instance",
        resource_id=f"vm-{resource}",
        project_id="p",
        source="collector",
        payload={"state": "active"},
    )


events = st.lists(st.builds(_event, st.integers(0, 8), st.integers(0, 3), st.integers(0, 4)), max_size=40)
chunk_sizes = st.lists(st.integers(1, 10), min_size=1, max_size=10)


def _pair(event: Event) -> tuple[str, datetime]:
    return (event.event_id, event.timestamp)


def _chunks(items: list[Event], sizes: list[int]) -> list[list[Event]]:
    chunks, start, index = [], 0, 0
    while start < len(items):
        size = sizes[index % len(sizes)]
        chunks.append(items[start : start + size])
        start, index = start + size, index + 1
    return chunks


@given(events, chunk_sizes, st.data())
def test_each_pair_is_sent_once_and_every_event_comes_back(
    items: list[Event], sizes: list[int], data: st.DataObject
) -> None:
    batch = BatchEvents(AT)
    sent: list[Event] = []
    first_keys = []
    for chunk in _chunks(items, sizes):
        fresh, first = batch.take(chunk)
        assert [_pair(e) for e in fresh] == sorted(_pair(e) for e in fresh)
        sent.extend(fresh)
        first_keys.extend(first)
    assert len({_pair(e) for e in sent}) == len(sent) == len({_pair(e) for e in items})
    # A repeat of a pair is a duplicate even when it names another resource: only first comers count.
    firsts = {_pair(e): e for e in reversed(items)}.values()
    assert sorted(first_keys, key=str) == sorted({e.key for e in firsts}, key=str)

    # The store inserted some of what was sent (the rest was stored before).
    stored = {_pair(e) for e in sent if data.draw(st.booleans())}
    inserted, duplicates, groups = batch.settle(stored)

    assert {_pair(e) for e in inserted} == stored
    assert Counter(map(id, inserted + duplicates)) == Counter(map(id, items))
    grouped = [s.event for group in groups.values() for s in group]
    assert sorted(map(_pair, grouped)) == sorted(map(_pair, inserted))
    assert all(s.event.key == key for key, group in groups.items() for s in group)
    assert all(s.received_at == AT for group in groups.values() for s in group)
