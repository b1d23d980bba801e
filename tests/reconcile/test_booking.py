"""Booking: batches in flight two at a time, a resource's corrections never in two at once, the answers
read in batch order, and a batch's exception raised as itself."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
import pytest

from tally.reconcile._booking import BATCH_SIZE, IN_FLIGHT, book
from tally.reconcile._model import Correction, Kind, Reason
from tally.store import StoreUnavailable

pytestmark = pytest.mark.anyio

AT = datetime(2026, 7, 1, tzinfo=UTC)


@dataclass(frozen=True)
class _Rejected:
    index: int
    reason: str


@dataclass(frozen=True)
class _Answer:
    rejected: list[_Rejected]


@dataclass
class _SlowPipeline:
    """Answers each odd batch at once and each even one after the batch that follows it, recording
    which resources were in flight together and how many batches at most."""

    refuse: set[str] = field(default_factory=set)
    fail_on_call: int | None = None
    calls: int = 0
    in_flight: list[set[str]] = field(default_factory=list)
    most: int = 0
    overlaps: list[set[str]] = field(default_factory=list)
    answered: list[int] = field(default_factory=list)
    answers: dict[int, anyio.Event] = field(default_factory=dict)

    def _answer_of(self, call: int) -> anyio.Event:
        return self.answers.setdefault(call, anyio.Event())

    async def ingest(self, items: Sequence[Any], *, source: str = "collector", scope: Any = None) -> Any:
        assert source == "reconciliation"
        call = self.calls
        self.calls += 1
        ids = {item["resource_id"] for item in items}
        for other in self.in_flight:
            if ids & other:
                self.overlaps.append(ids & other)
        self.in_flight.append(ids)
        self.most = max(self.most, len(self.in_flight))
        try:
            if call % 2 == 0:
                # The batch after it answers first: waited for rather than outslept, so that a slow host
                # building that batch cannot reorder them; bounded, as the booking may send none beside.
                with anyio.move_on_after(0.5):
                    await self._answer_of(call + 1).wait()
            else:
                await anyio.sleep(0.001)
            if call == self.fail_on_call:
                raise StoreUnavailable("the database went away")
            self.answered.append(call)
            self._answer_of(call).set()
            refused = [i for i, item in enumerate(items) if item["resource_id"] in self.refuse]
            return _Answer([_Rejected(i, "refused") for i in refused])
        finally:
            self.in_flight.remove(ids)


def _corrections(ids: Sequence[str], kind: Kind = Kind.CREATE) -> list[Correction]:
    return [Correction(kind, Reason.MISSED_CREATE, "instance", rid, "p1", AT, state="active") for rid in ids]


async def _book(pipeline: _SlowPipeline, corrections: Sequence[Correction]) -> Any:
    return await book(pipeline, corrections, sync_run_id="run-1", cloud="c1", platform="openstack")


async def test_batches_are_booked_two_at_a_time_and_counted_in_batch_order() -> None:
    pipeline = _SlowPipeline(refuse={"vm-0003", f"vm-{BATCH_SIZE + 7:04d}"})
    ids = [f"vm-{i:04d}" for i in range(BATCH_SIZE * 4)]
    result = await _book(pipeline, _corrections(ids))
    assert pipeline.calls == 4
    assert pipeline.most == IN_FLIGHT == 2
    # The second batch was answered before the first, yet the errors read in the run's order.
    assert pipeline.answered[:2] == [1, 0]
    assert result.errors == [
        "booking instance vm-0003: refused",
        f"booking instance vm-{BATCH_SIZE + 7:04d}: refused",
    ]
    assert result.booked == {Kind.CREATE: BATCH_SIZE * 4 - 2, Kind.UPDATE: 0, Kind.DELETE: 0}


async def test_a_resource_split_across_batches_is_never_in_flight_twice() -> None:
    # A whole life (create and delete of one server) straddles the first batches' boundary.
    ids = [f"vm-{i:04d}" for i in range(BATCH_SIZE - 1)]
    corrections = [
        *_corrections(ids),
        *_corrections(["vm-edge"]),
        *_corrections(["vm-edge"], Kind.DELETE),
        *_corrections([f"vm-{i:04d}" for i in range(BATCH_SIZE, 2 * BATCH_SIZE)]),
    ]
    pipeline = _SlowPipeline()
    result = await _book(pipeline, corrections)
    assert pipeline.overlaps == []
    assert result.booked[Kind.DELETE] == 1
    assert sum(result.booked.values()) == len(corrections)


async def test_a_batch_that_raises_ends_the_booking_with_its_own_exception() -> None:
    pipeline = _SlowPipeline(fail_on_call=0)
    ids = [f"vm-{i:04d}" for i in range(BATCH_SIZE * 5)]
    with pytest.raises(StoreUnavailable, match="went away"):
        await _book(pipeline, _corrections(ids))
    # The batch beside it ended; none was sent once the failure was known.
    assert pipeline.calls < 5
    assert pipeline.in_flight == []
