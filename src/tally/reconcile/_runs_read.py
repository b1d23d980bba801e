"""The cloud's earlier runs as one sync reads them: each span of the record read from the store once.

Two planning passes read the same record: the absence pass pages forward from the oldest row it
deletes (``runs_until_held``), the vouched restore looks up the previous completed run and reads the
runs since the oldest late event. Their windows often meet. ``RecordedRuns`` stands in for the store
(the same ``RecordReader`` methods, the same answers) and keeps what it read: a window already read is
answered from memory, and a window that reaches past it reads only the part not yet read.

It is valid while the cloud's lock is held and after the run's own row was inserted: a cloud's runs
are written only under its lock, so none appears or changes in the record the run reads. The other
reads (receipts, late keys, histories) go to the store as they are asked: events keep arriving
during a run, and those answers are the store's of the moment.

Instants are exact to the microsecond (as the store keeps them), so the open window ``(after,
before)`` the store answers is the closed span ``[after + 1 µs, before - 1 µs]`` here, and spans
that touch join.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from tally.core import ONE_MICROSECOND, ResourceKey, StoredEvent
from tally.store import SyncReceipts

from ._record_reads import RecordReader


def _order(record: dict[str, Any]) -> tuple[datetime, bool, datetime]:
    """The store's order of runs: by ``started_at``, then ``completed_at`` with the unfinished last."""
    completed = record["completed_at"]
    return record["started_at"], completed is None, completed or record["started_at"]


class RecordedRuns:
    """A ``RecordReader`` over ``store`` that reads each run of ``cloud`` at most once per window."""

    def __init__(self, store: RecordReader, cloud: str) -> None:
        self._store = store
        self._cloud = cloud
        self._runs: dict[str, dict[str, Any]] = {}
        # Disjoint closed spans of started_at, oldest first: every run of the cloud inside one is known.
        self._spans: list[tuple[datetime, datetime]] = []

    async def sync_runs_between(
        self, cloud: str, after: datetime, before: datetime, *, limit: int | None = None
    ) -> list[dict[str, Any]]:
        if cloud != self._cloud:
            return await self._store.sync_runs_between(cloud, after, before, limit=limit)
        first, last = after + ONE_MICROSECOND, before - ONE_MICROSECOND
        if first > last:
            return []
        held = self._held_through(first)
        if held is not None:
            known = self._inside(first, min(last, held))
            if held >= last or (limit is not None and len(known) >= limit):
                return known[:limit] if limit is not None else known
        if limit is None:
            for gap_first, gap_last in self._gaps(first, last):
                page = await self._store.sync_runs_between(
                    cloud, gap_first - ONE_MICROSECOND, gap_last + ONE_MICROSECOND
                )
                self._note(gap_first, gap_last, page)
            return self._inside(first, last)
        # A page that reaches past what is held is read whole: it is what the store would answer.
        page = await self._store.sync_runs_between(cloud, after, before, limit=limit)
        # A full page holds every run before its last one's instant; a short one the whole window.
        self._note(first, last if len(page) < limit else page[-1]["started_at"] - ONE_MICROSECOND, page)
        return page

    async def sync_receipts(self, keys: Sequence[ResourceKey]) -> dict[ResourceKey, SyncReceipts]:
        return await self._store.sync_receipts(keys)

    async def late_keys(
        self,
        cloud: str,
        received_after: datetime,
        dated_before: datetime,
        *,
        except_types: Sequence[str] = (),
    ) -> list[ResourceKey]:
        return await self._store.late_keys(cloud, received_after, dated_before, except_types=except_types)

    async def histories(self, keys: Sequence[ResourceKey]) -> dict[ResourceKey, list[StoredEvent]]:
        return await self._store.histories(keys)

    def _held_through(self, first: datetime) -> datetime | None:
        """The end of the held span ``first`` is in, or None."""
        for lo, hi in self._spans:
            if lo <= first <= hi:
                return hi
        return None

    def _inside(self, first: datetime, last: datetime) -> list[dict[str, Any]]:
        return sorted((r for r in self._runs.values() if first <= r["started_at"] <= last), key=_order)

    def _gaps(self, first: datetime, last: datetime) -> list[tuple[datetime, datetime]]:
        """The parts of ``[first, last]`` no held span covers."""
        gaps: list[tuple[datetime, datetime]] = []
        at = first
        for lo, hi in self._spans:
            if hi < at:
                continue
            if lo > last:
                break
            if lo > at:
                gaps.append((at, lo - ONE_MICROSECOND))
            at = hi + ONE_MICROSECOND
        if at <= last:
            gaps.append((at, last))
        return gaps

    def _note(self, first: datetime, last: datetime, page: Sequence[dict[str, Any]]) -> None:
        """Keep ``page``, and ``[first, last]`` as held when it is not empty."""
        for record in page:
            self._runs[str(record["id"])] = record
        if first > last:
            return
        spans = sorted([*self._spans, (first, last)])
        joined = [spans[0]]
        for lo, hi in spans[1:]:
            top_lo, top_hi = joined[-1]
            if lo <= top_hi + ONE_MICROSECOND:
                joined[-1] = (top_lo, max(top_hi, hi))
            else:
                joined.append((lo, hi))
        self._spans = joined
