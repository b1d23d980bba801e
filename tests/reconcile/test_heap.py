"""The collector during a run: what a run holds is frozen while it runs, and the last run to end gives
every object back to the collector (a cycle freed while frozen is collected then)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reconcile_support import T0, builder, minutes, open_harness

from tally.reconcile import Status, _heap, _run
from tally.store import Store


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def test_settle_outside_a_run_freezes_nothing() -> None:
    held = [_Node() for _ in range(10)]
    _heap.settle()
    assert gc.get_freeze_count() == 0
    assert held


def test_a_run_freezes_what_it_holds_and_the_last_run_to_end_unfreezes() -> None:
    with _heap.holding():
        held = [_Node() for _ in range(10)]
        _heap.settle()
        frozen = gc.get_freeze_count()
        assert frozen >= len(held)
        with _heap.holding():
            _heap.settle()
        # The inner run ended while the outer one holds: nothing goes back yet.
        assert gc.get_freeze_count() >= frozen
    assert gc.get_freeze_count() == 0


def test_a_cycle_freed_while_frozen_is_collected_once_the_run_ends() -> None:
    with _heap.holding():
        node = _Node()
        gone = weakref.ref(node)
        _heap.settle()
        del node
        gc.collect()
        assert gone() is not None  # frozen: no collection walks it
    gc.collect()
    assert gone() is None


def test_the_run_unfreezes_when_its_block_raises() -> None:
    with pytest.raises(RuntimeError), _heap.holding():
        _heap.settle()
        assert gc.get_freeze_count() > 0
        raise RuntimeError("the run broke")
    assert gc.get_freeze_count() == 0


@pytest.mark.anyio
async def test_a_sync_freezes_what_it_planned_and_ends_with_nothing_frozen(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = builder()
    p = b.project("alpha")
    f = b.flavor("m1.small", vcpus=1, ram_mb=2048, disk_gb=20)
    for _ in range(3):
        b.instance(p, f, created_at=T0 + minutes(5)).build()
    frozen_while_booking: list[int] = []
    book = _run.book

    async def booking(*args: Any, **kwargs: Any) -> Any:
        frozen_while_booking.append(gc.get_freeze_count())
        return await book(*args, **kwargs)

    monkeypatch.setattr(_run, "book", booking)
    async with open_harness(b.build(), store, tmp_path) as h:
        outcome = await h.sync(T0 + minutes(60))
    assert outcome.status is Status.COMPLETED
    assert outcome.stats["created"] == 3
    # The plan was frozen before its booking; the run's end gave everything back.
    assert frozen_while_booking and frozen_while_booking[0] > 0
    assert gc.get_freeze_count() == 0
