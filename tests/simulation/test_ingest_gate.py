"""The gate of a paced run: a delivery dated after the next sync's instant waits until the sync ran."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tally.core import format_instant
from tally.simulation._gate import IngestGate, newest_instant

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 7, 1, tzinfo=UTC)
MIN = timedelta(minutes=1)


class Recording:
    """A pipeline that records what reached it, and with which source."""

    def __init__(self) -> None:
        self.batches: list[tuple[str, list[object]]] = []

    async def ingest(self, items: Sequence[object], *, source: str = "collector", scope: Any = None) -> Any:
        self.batches.append((source, list(items)))
        return len(items)


def event(at: datetime) -> dict[str, Any]:
    return {"event_id": format_instant(at), "timestamp": format_instant(at)}


def test_newest_instant_reads_the_events_timestamps_and_skips_what_has_none() -> None:
    batch: list[object] = [event(T0 + MIN), event(T0 + 3 * MIN), {"timestamp": "yesterday"}, "junk", {}]
    assert newest_instant(batch) == T0 + 3 * MIN
    assert newest_instant([{"timestamp": 5}, {"timestamp": "2026-07-01T00:00:00"}]) is None


async def test_a_delivery_dated_up_to_the_limit_passes_while_a_later_one_waits() -> None:
    pipeline = Recording()
    gate = IngestGate(pipeline)
    gate.hold_after(T0 + 10 * MIN)
    assert await gate.ingest([event(T0 + 10 * MIN)]) == 1
    async with anyio.create_task_group() as tg:
        tg.start_soon(gate.ingest, [event(T0 + 9 * MIN), event(T0 + 11 * MIN)])
        await anyio.wait_all_tasks_blocked()
        assert len(pipeline.batches) == 1  # the later batch is held whole
        gate.hold_after(T0 + 20 * MIN)  # the sync ran: the next one's instant is the limit
    assert [len(items) for _, items in pipeline.batches] == [1, 2]
    assert pipeline.batches[1][0] == "collector"


async def test_a_delivery_waits_through_limits_it_is_still_after_and_passes_when_the_gate_opens() -> None:
    pipeline = Recording()
    gate = IngestGate(pipeline)
    gate.hold_after(T0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(gate.ingest, [event(T0 + 90 * MIN)])
        await anyio.wait_all_tasks_blocked()
        gate.hold_after(T0 + 60 * MIN)
        await anyio.wait_all_tasks_blocked()
        assert pipeline.batches == []
        gate.hold_after(None)
    assert len(pipeline.batches) == 1


async def test_a_delivery_without_readable_timestamps_is_not_held() -> None:
    pipeline = Recording()
    gate = IngestGate(pipeline)
    gate.hold_after(T0)
    with anyio.fail_after(5):
        await gate.ingest([{"timestamp": "not an instant"}], source="collector")
    assert len(pipeline.batches) == 1


@settings(max_examples=60, deadline=None)
@given(
    batches=st.lists(st.lists(st.integers(0, 300), min_size=1, max_size=5), min_size=1, max_size=12),
    syncs=st.lists(st.integers(1, 300), min_size=1, max_size=6, unique=True),
)
def test_what_the_store_holds_at_a_sync_is_never_dated_after_its_instant(
    batches: list[list[int]], syncs: list[int]
) -> None:
    # Deliveries arrive in any order while the syncs run one after another; at each sync the store
    # holds only events dated up to its instant, and after the last one everything was delivered.
    async def run() -> None:
        pipeline = Recording()
        gate = IngestGate(pipeline)
        instants = sorted(T0 + m * MIN for m in syncs)
        gate.hold_after(instants[0])
        async with anyio.create_task_group() as tg:
            for minutes in batches:
                tg.start_soon(gate.ingest, [event(T0 + m * MIN) for m in minutes])
            for index, at in enumerate(instants):
                await anyio.wait_all_tasks_blocked()
                stored = [newest_instant(items) for _, items in pipeline.batches]
                assert all(s is not None and s <= at for s in stored)
                assert len(stored) >= sum(1 for b in batches if T0 + max(b) * MIN <= at)
                gate.hold_after(instants[index + 1] if index + 1 < len(instants) else None)
        assert sorted(len(items) for _, items in pipeline.batches) == sorted(len(b) for b in batches)

    anyio.run(run)
