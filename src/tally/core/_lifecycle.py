"""The lifecycle fold: a key's ordered events in, its intervals of constant (state, size, project) out.

The fold walks the events in ``fold_order`` once, keeping the open interval and what the history says
of the resource's creation and deletion. A delete closes the open interval and is terminal: only a
create opens another. A retention snapshot stands for everything before its boundary: a live one
continues (or opens) the interval in effect there, an ended one closes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from ._event import Category, Event, StoredEvent
from ._fold import (
    HISTORY_STARTS_WITHOUT_CREATE,
    SNAPSHOT_ENDED,
    SNAPSHOT_LIVE,
    Interval,
    Lifecycle,
    is_snapshot,
    optional_instant,
    sorted_events,
)
from ._time import parse_instant

Facts = tuple[str, dict[str, Any], str]


def _facts(interval: Interval) -> Facts:
    return (interval.state, dict(interval.size), interval.project_id)


def _opening(ordered: list[StoredEvent]) -> tuple[bool, list[str]]:
    """Whether the history opens with a create (or a snapshot of one), and the warning when not."""
    if not ordered:
        return True, []
    first = ordered[0].event
    if is_snapshot(first):
        facts_of_before = first.payload.get("lifecycle")
        starts_without = isinstance(facts_of_before, Mapping) and facts_of_before.get("starts_without_create")
        return first.event_type == SNAPSHOT_ENDED, [HISTORY_STARTS_WITHOUT_CREATE] if starts_without else []
    if first.category is not Category.CREATE:
        return False, [HISTORY_STARTS_WITHOUT_CREATE]
    return True, []


class _LifecycleFold:
    """The state of one walk over a key's ordered events."""

    def __init__(self) -> None:
        self.intervals: list[Interval] = []
        self.current: Interval | None = None
        self.created_at: datetime | None = None
        self.deleted_at: datetime | None = None
        self.deleted = False
        # The interval a live snapshot continues from before its boundary.
        self.continued: Interval | None = None

    def close(self, at: datetime) -> None:
        current = self.current
        # The span a live snapshot continues ended before its boundary when it ends at the boundary
        # itself: its empty remainder stays, so the run still ends (or changes) there for the usage.
        if current is not None and (at > current.start or current is self.continued):
            self.intervals.append(replace(current, end=at))
        self.current = None

    def open(self, nxt: Interval) -> None:
        # A span dropped for zero length must not split the interval around it in two.
        intervals = self.intervals
        if intervals and intervals[-1].end == nxt.start and _facts(intervals[-1]) == _facts(nxt):
            self.current = replace(intervals.pop(), end=None)
        else:
            self.current = nxt

    def change_to(self, nxt: Interval) -> None:
        """Open ``nxt``, or end the open interval at its start when its facts differ."""
        if self.current is None:
            self.open(nxt)
        elif _facts(self.current) != _facts(nxt):
            self.close(nxt.start)
            self.open(nxt)

    def snapshot(self, event: Event) -> None:
        """A retired month's boundary: the facts of everything before it, at once."""
        before = event.payload.get("lifecycle")
        before = before if isinstance(before, Mapping) else {}
        if before.get("created_at") is not None:
            self.created_at = parse_instant(before["created_at"])
        if event.event_type == SNAPSHOT_LIVE:
            self.deleted, self.deleted_at = False, None
            self.change_to(
                Interval(event.timestamp, None, event.state or "", dict(event.size or {}), event.project_id)
            )
            self.continued = self.current
            return
        self.close(event.timestamp)
        self.deleted = True
        self.deleted_at = optional_instant(before.get("deleted_at")) or event.timestamp

    def event(self, event: Event) -> None:
        category = event.category
        if category is Category.DELETE:
            if not self.deleted:
                self.close(event.timestamp)
                self.deleted = True
                self.deleted_at = event.timestamp
            return
        if category is Category.UPDATE and self.deleted:
            return
        if category is Category.CREATE:
            if self.created_at is None:
                self.created_at = event.timestamp
            if self.deleted:
                self.deleted = False
                self.deleted_at = None
        previous = self.current
        state = event.state if event.state is not None else (previous.state if previous else "")
        if event.size is not None:
            size: Mapping[str, Any] = dict(event.size)
        else:
            size = previous.size if previous else {}
        self.change_to(Interval(event.timestamp, None, state, size, event.project_id))


def lifecycle(events: Iterable[StoredEvent]) -> Lifecycle:
    """The intervals of constant (state, size, project) a key's history yields."""
    ordered = sorted_events(events)
    opened_by_create, warnings = _opening(ordered)
    fold = _LifecycleFold()
    for stored in ordered:
        if is_snapshot(stored.event):
            fold.snapshot(stored.event)
        else:
            fold.event(stored.event)
    if fold.current is not None:
        fold.intervals.append(fold.current)
    return Lifecycle(
        tuple(fold.intervals), fold.created_at, fold.deleted_at, tuple(warnings), opened_by_create
    )
