"""The record of earlier runs a sync reads once (``RecordedRuns``): it answers every window exactly as the
store does, in the store's order and within its limit, and a run of a window already read is not read
from the store again. Without I/O: a store of a list of runs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from tally.core import ResourceKey, StoredEvent
from tally.reconcile._runs_read import RecordedRuns
from tally.store import SyncReceipts

T = datetime(2026, 7, 10, tzinfo=UTC)
CLOUD = "os-a"


def m(n: int) -> datetime:
    return T + timedelta(minutes=n)


class ListedRuns:
    """A store of runs in a list; counts each run it hands out."""

    def __init__(self, runs: Sequence[dict[str, Any]]) -> None:
        self.runs = sorted(
            runs, key=lambda r: (r["started_at"], r["completed_at"] is None, r["completed_at"] or T)
        )
        self.reads: list[str] = []
        self.calls = 0

    async def sync_runs_between(
        self, cloud: str, after: datetime, before: datetime, *, limit: int | None = None
    ) -> list[dict[str, Any]]:
        self.calls += 1
        inside = [dict(r) for r in self.runs if r["cloud"] == cloud and after < r["started_at"] < before]
        answer = inside[:limit] if limit is not None else inside
        self.reads.extend(r["id"] for r in answer)
        return answer

    async def sync_receipts(self, keys: Sequence[ResourceKey]) -> dict[ResourceKey, SyncReceipts]:
        return {}

    async def late_keys(
        self,
        cloud: str,
        received_after: datetime,
        dated_before: datetime,
        *,
        except_types: Sequence[str] = (),
    ) -> list[ResourceKey]:
        return []

    async def histories(self, keys: Sequence[ResourceKey]) -> dict[ResourceKey, list[StoredEvent]]:
        return {}


def run(n: int, minute: int, *, completed: int | None, cloud: str = CLOUD) -> dict[str, Any]:
    return {
        "id": f"run-{n}",
        "cloud": cloud,
        "started_at": m(minute),
        "completed_at": m(completed) if completed is not None else None,
        "status": "completed" if completed is not None else "running",
        "stats": {},
    }


def ids(runs: Sequence[dict[str, Any]]) -> list[str]:
    return [r["id"] for r in runs]


# Distinct (started_at, completed_at) pairs: the store's order of two runs equal in both is arbitrary.
pairs = st.lists(
    st.tuples(st.integers(0, 60), st.one_of(st.none(), st.integers(0, 5))), unique=True, max_size=40
)
windows = st.lists(
    st.tuples(st.integers(-2, 62), st.integers(-2, 62), st.one_of(st.none(), st.integers(1, 6))),
    min_size=1,
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(pairs=pairs, asked=windows)
def test_every_window_is_answered_as_the_store_answers_it(
    pairs: list[tuple[int, int | None]], asked: list[tuple[int, int, int | None]]
) -> None:
    listed = [
        run(n, start, completed=None if ended is None else start + ended)
        for n, (start, ended) in enumerate(pairs)
    ]
    listed.append(run(len(listed), 30, completed=31, cloud="os-b"))
    store = ListedRuns(listed)
    direct = ListedRuns(listed)
    record = RecordedRuns(store, CLOUD)

    async def main() -> None:
        for after, before, limit in asked:
            for cloud in (CLOUD, "os-b"):
                expected = await direct.sync_runs_between(cloud, m(after), m(before), limit=limit)
                answered = await record.sync_runs_between(cloud, m(after), m(before), limit=limit)
                assert ids(answered) == ids(expected)

    anyio.run(main)
    if all(limit is None for _, _, limit in asked):
        mine = [r for r in store.reads if r != f"run-{len(listed) - 1}"]
        assert len(mine) == len(set(mine))  # windows read whole: no run of the cloud read twice


def test_the_passes_windows_that_meet_read_the_store_once_each_part() -> None:
    store = ListedRuns([run(n, 10 * n, completed=10 * n + 1) for n in range(1, 8)])
    record = RecordedRuns(store, CLOUD)

    async def main() -> None:
        # The absence pass's page from the oldest row it deletes: fewer than a page, so the whole window.
        assert ids(await record.sync_runs_between(CLOUD, m(15), m(100), limit=50)) == [
            f"run-{n}" for n in range(2, 8)
        ]
        # The vouched restore's previous run, and the runs since the oldest late event: held already.
        assert ids(
            await record.sync_runs_between(CLOUD, m(70) - timedelta(microseconds=1), m(100), limit=50)
        ) == ["run-7"]
        assert ids(await record.sync_runs_between(CLOUD, m(30), m(100))) == [f"run-{n}" for n in range(4, 8)]
        # A window reaching before what is held reads only the part before it.
        assert ids(await record.sync_runs_between(CLOUD, m(0), m(100))) == [f"run-{n}" for n in range(1, 8)]

    anyio.run(main)
    assert store.calls == 2
    assert sorted(store.reads) == sorted(f"run-{n}" for n in range(1, 8))
