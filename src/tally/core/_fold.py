"""The timeline fold: a resource's events in, its lifecycle and projection row out.

One comparator orders every fold: (timestamp, received_at, event_id). The
projection row and the lifecycle intervals are both reductions over that order,
so folding the same events in any arrival order, with any duplication removed,
gives the same answer. A delete is terminal: after it, only an explicit create
brings the resource back, so a late update can never revive what was deleted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ._event import Category, Event, ResourceKey, StoredEvent, category_of
from ._time import format_instant, parse_instant

HISTORY_STARTS_WITHOUT_CREATE = "history_starts_without_create"
DELETED = "deleted"
# Retention snapshots (store/_retention.py): one event at a retired month's boundary stands for every
# event of the key before it. Its payload holds the folded row ("row"), the lifecycle facts
# ("lifecycle") and, on top, the state and size of the interval open at the boundary (the usage read
# extracts only those). The type says what the fold must know without the payload: live at the
# boundary, or ended before it, with or without a run the next create follows (the usage counts it).
SNAPSHOT_SOURCE = "retention"
SNAPSHOT_LIVE = "tally.retention.snapshot"
SNAPSHOT_ENDED = "tally.retention.snapshot.delete"
SNAPSHOT_ENDED_UNOPENED = "tally.retention.snapshot_unopened.delete"
SNAPSHOT_TYPES = frozenset({SNAPSHOT_LIVE, SNAPSHOT_ENDED, SNAPSHOT_ENDED_UNOPENED})


def fold_order(stored: StoredEvent) -> tuple[datetime, datetime, str]:
    """The one order every fold uses."""
    return (stored.event.timestamp, stored.received_at, stored.event.event_id)


@dataclass(frozen=True, slots=True)
class Interval:
    """A half-open span [start, end) of constant state, size and project; end None = still open."""

    start: datetime
    end: datetime | None
    state: str
    size: Mapping[str, Any]
    project_id: str


@dataclass(frozen=True, slots=True)
class Lifecycle:
    intervals: tuple[Interval, ...]
    created_at: datetime | None
    deleted_at: datetime | None
    warnings: tuple[str, ...]
    # The first run of intervals was opened by a create (the usage counts it); False for a history
    # that starts otherwise, or that continues from a live snapshot.
    opened_by_create: bool = True


@dataclass(frozen=True, slots=True)
class ResourceRow:
    """A row of ``current_resources``: the state after folding every event of one key.

    Invariant: ``deleted_at`` is set exactly when ``state`` is ``deleted``.
    """

    key: ResourceKey
    platform: str
    project_id: str
    state: str
    size: Mapping[str, Any]
    created_at: datetime | None
    deleted_at: datetime | None
    last_event_type: str
    last_event_at: datetime
    last_payload: Mapping[str, Any]
    first_event_at: datetime
    # The newest event in fold order: a later arrival sorting before it forces a replay.
    last_received_at: datetime = field(compare=False, default=datetime.min)
    last_event_id: str = field(compare=False, default="")

    @property
    def is_live(self) -> bool:
        return self.deleted_at is None

    def to_wire(self) -> dict[str, Any]:
        """The JSON object of this row, as the API answers it."""
        created_at, deleted_at = self.created_at, self.deleted_at
        return {
            "cloud": self.key.cloud,
            "platform": self.platform,
            "resource_type": self.key.resource_type,
            "resource_id": self.key.resource_id,
            "project_id": self.project_id,
            "state": self.state,
            "size": dict(self.size),
            "created_at": None if created_at is None else format_instant(created_at),
            "deleted_at": None if deleted_at is None else format_instant(deleted_at),
            "first_event_at": format_instant(self.first_event_at),
            "last_event_type": self.last_event_type,
            "last_event_at": format_instant(self.last_event_at),
            "last_payload": dict(self.last_payload),
        }


def sorted_events(events: Iterable[StoredEvent]) -> list[StoredEvent]:
    return sorted(events, key=fold_order)


def is_snapshot(event: Event) -> bool:
    """A retention snapshot: one of its types, written by retention (a posted event is never one: the
    pipeline stamps its own source on what it ingests)."""
    return event.event_type in SNAPSHOT_TYPES and event.source == SNAPSHOT_SOURCE


def optional_instant(value: Any) -> datetime | None:
    return None if value is None else parse_instant(value)


def snapshot_row(event: Event) -> ResourceRow:
    """The projection row a snapshot restores: the fold of everything before its boundary."""
    row = event.payload["row"]
    return ResourceRow(
        key=event.key,
        platform=row["platform"],
        project_id=row["project_id"],
        state=row["state"],
        size=dict(row["size"]),
        created_at=optional_instant(row["created_at"]),
        deleted_at=optional_instant(row["deleted_at"]),
        last_event_type=row["last_event_type"],
        last_event_at=parse_instant(row["last_event_at"]),
        last_payload=dict(row["last_payload"]),
        first_event_at=parse_instant(row["first_event_at"]),
        last_received_at=parse_instant(row["last_received_at"]),
        last_event_id=row["last_event_id"],
    )


def step(row: ResourceRow | None, stored: StoredEvent) -> ResourceRow:
    """Apply one event, already in fold order, to a projection row."""
    # Rows are built field by field rather than with dataclasses.replace: this runs once per ingested
    # event and replace() costs several times a plain construction.
    event = stored.event
    if event.event_type in SNAPSHOT_TYPES and event.source == SNAPSHOT_SOURCE:
        # What came before the boundary is the snapshot's: an event of a retired month that arrived
        # after it (stored in events_default) sorts before it and is overridden.
        return snapshot_row(event)
    category = category_of(event.event_type)
    at = event.timestamp
    if row is None:
        size = event.size if category is not Category.DELETE else None
        return ResourceRow(
            key=event.key,
            platform=event.platform,
            project_id=event.project_id,
            state=DELETED if category is Category.DELETE else (event.state or ""),
            size=dict(size) if size is not None else {},
            created_at=at if category is Category.CREATE else None,
            deleted_at=at if category is Category.DELETE else None,
            last_event_type=event.event_type,
            last_event_at=at,
            last_payload=dict(event.payload),
            first_event_at=at,
            last_received_at=stored.received_at,
            last_event_id=event.event_id,
        )
    project_id = row.project_id
    state = row.state
    size_now = row.size
    created_at = row.created_at
    deleted_at = row.deleted_at
    if category is Category.CREATE:
        new_size = event.size
        project_id = event.project_id
        state = event.state or state
        size_now = dict(new_size) if new_size is not None else size_now
        if created_at is None:
            created_at = at
        deleted_at = None
    elif category is Category.DELETE:
        if deleted_at is None:
            state = DELETED
            deleted_at = at
    elif deleted_at is None:
        new_state = event.state
        new_size = event.size
        project_id = event.project_id
        if new_state is not None:
            state = new_state
        size_now = dict(new_size) if new_size is not None else size_now
    return ResourceRow(
        key=row.key,
        platform=event.platform,
        project_id=project_id,
        state=state,
        size=size_now,
        created_at=created_at,
        deleted_at=deleted_at,
        last_event_type=event.event_type,
        last_event_at=at,
        last_payload=dict(event.payload),
        first_event_at=row.first_event_at,
        last_received_at=stored.received_at,
        last_event_id=event.event_id,
    )


def project(events: Iterable[StoredEvent]) -> ResourceRow | None:
    """Replay a key's whole history into its projection row (None for no events)."""
    row: ResourceRow | None = None
    for stored in sorted_events(events):
        row = step(row, stored)
    return row


def project_at(events: Iterable[StoredEvent], at: datetime) -> ResourceRow | None:
    """The projection row as it stood at ``at``: the same replay over the events dated up to ``at``
    (an event at ``at`` itself counts, as an interval starts at its event); None when there were none."""
    return project(e for e in events if e.event.timestamp <= at)


def needs_replay(row: ResourceRow | None, new_events: Iterable[StoredEvent]) -> bool:
    """True when an event sorts before the row's newest one: the row must be rebuilt from history."""
    if row is None:
        return False
    # fold_order(e) < newest, comparing the timestamps alone first: they differ nearly always, and
    # this runs for every ingested event.
    last_at = row.last_event_at
    for stored in new_events:
        at = stored.event.timestamp
        if at > last_at:
            continue
        if at < last_at:
            return True
        if (stored.received_at, stored.event.event_id) < (row.last_received_at, row.last_event_id):
            return True
    return False


def advance(row: ResourceRow | None, new_events: Iterable[StoredEvent]) -> ResourceRow | None:
    """Fold events that all sort after the row's newest one onto the row."""
    ordered = (
        new_events if isinstance(new_events, list) and len(new_events) < 2 else sorted_events(new_events)
    )
    for stored in ordered:
        row = step(row, stored)
    return row
