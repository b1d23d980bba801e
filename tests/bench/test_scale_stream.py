"""bench.scale's synthetic stream: the projection rows it COPYs are the fold of the events it COPYs."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from itertools import pairwise
from typing import Any

import orjson
from bench.scale import ROW_COLUMNS
from bench.scale_stream import RECEIVED_LAG, Stream
from hypothesis import given, settings
from hypothesis import strategies as st

from tally.core import StoredEvent, parse_event, project
from tally.store._sql_text import EVENT_SELECT


def columns(names: str, line: str) -> dict[str, Any]:
    """A line of COPY text as {column: value}, as PostgreSQL would read it for these columns."""
    values: dict[str, Any] = {}
    for name, text in zip((n.strip() for n in names.split(",")), line.rstrip("\n").split("\t"), strict=True):
        if text == "\\N":
            values[name] = None
        elif name in ("size", "payload", "last_payload"):
            values[name] = orjson.loads(text)
        elif name in ("timestamp", "received_at") or name.endswith("_at"):
            values[name] = datetime.fromisoformat(text)
        else:
            values[name] = text
    return values


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32), total=st.integers(1, 3_000), live=st.integers(1, 200))
def test_rows_are_the_fold_of_the_events(seed: int, total: int, live: int) -> None:
    stream = Stream(total, live, seed=seed)
    histories: dict[str, list[StoredEvent]] = defaultdict(list)
    stamps = []
    for _ in range(total):
        event = stream.next()
        stored = columns(EVENT_SELECT, event.copy_line())
        wire = event.wire()
        # The COPY line and the posted item are the same event.
        assert {k: stored[k] for k in ("event_id", "event_type", "resource_id", "payload")} == {
            k: wire[k] for k in ("event_id", "event_type", "resource_id", "payload")
        }
        assert stored["received_at"] == stored["timestamp"] + RECEIVED_LAG
        stamps.append(stored["timestamp"])
        histories[event.resource.rid].append(StoredEvent(parse_event(wire), stored["received_at"]))
    assert all(a < b for a, b in pairwise(stamps))  # strictly: one key never has a tie
    assert len({e.event.event_id for h in histories.values() for e in h}) == total
    rows = list(stream.touched.values())
    assert {r.rid for r in rows} == set(histories)
    assert stream.live_count == sum(1 for r in rows if r.deleted is None)
    for resource in rows:
        copied = columns(ROW_COLUMNS, resource.copy_row())
        folded = project(histories[resource.rid])
        assert folded is not None
        assert copied == {
            "cloud": folded.key.cloud,
            "platform": folded.platform,
            "resource_type": folded.key.resource_type,
            "resource_id": folded.key.resource_id,
            "project_id": folded.project_id,
            "state": folded.state,
            "size": folded.size,
            "created_at": folded.created_at,
            "deleted_at": folded.deleted_at,
            "last_event_type": folded.last_event_type,
            "last_event_at": folded.last_event_at,
            "last_payload": folded.last_payload,
            "first_event_at": folded.first_event_at,
            "last_received_at": folded.last_received_at,
            "last_event_id": folded.last_event_id,
        }


def test_the_mix_at_the_target_population() -> None:
    """Past the ramp, creates and deletes are about 12 % each and instances carry most updates."""
    stream = Stream(200_000, 2_000, seed=7)
    kinds: dict[str, int] = defaultdict(int)
    for n in range(200_000):
        event = stream.next()
        if n >= 20_000:
            kinds[event.event_type] += 1
    measured = sum(kinds.values())
    creates = sum(v for k, v in kinds.items() if "create" in k.split(".")) / measured
    deletes = sum(v for k, v in kinds.items() if "delete" in k.split(".")) / measured
    instance_updates = (
        sum(
            v
            for k, v in kinds.items()
            if k.startswith("compute.") and "create" not in k and "delete" not in k
        )
        / measured
    )
    assert 0.10 < creates < 0.14 and 0.10 < deletes < 0.14
    assert 0.45 < instance_updates < 0.6
    assert 1_800 < stream.live_count < 2_200
