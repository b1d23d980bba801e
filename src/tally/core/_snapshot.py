"""Retention snapshots: one event that stands, at a retired month's boundary, for a key's events before it.

Retention takes closed months out of the events table. For the folds of what stays to give the same
answers, each key with events before the boundary gets one snapshot dated at the boundary, computed
here from those events: the projection row they fold to (``step`` restores it whole), the lifecycle
facts (created and deleted instants, whether the history started without a create) and the state,
size and project of the interval open at the boundary. The snapshot's type tells the usage fold what
it cannot read from a payload it only half loads (see ``_fold``'s ``SNAPSHOT_*``).

The snapshot sorts after every event before the boundary (its timestamp is the boundary) and before
every event kept (an event dated at the boundary itself was received later: when one was received
earlier, the snapshot's receipt is moved just before it). Its receipt is otherwise the newest of the
events it stands for, so a usage line's ``received_at`` stays what it was. Pure.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ._event import Event, ResourceKey, StoredEvent
from ._fold import (
    HISTORY_STARTS_WITHOUT_CREATE,
    SNAPSHOT_ENDED,
    SNAPSHOT_ENDED_UNOPENED,
    SNAPSHOT_LIVE,
    SNAPSHOT_SOURCE,
    ResourceRow,
    project,
)
from ._lifecycle import lifecycle
from ._time import ONE_MICROSECOND, format_instant


def _opt(at: datetime | None) -> str | None:
    return None if at is None else format_instant(at)


def _row_document(row: ResourceRow) -> dict[str, Any]:
    return {
        "platform": row.platform,
        "project_id": row.project_id,
        "state": row.state,
        "size": dict(row.size),
        "created_at": _opt(row.created_at),
        "deleted_at": _opt(row.deleted_at),
        "last_event_type": row.last_event_type,
        "last_event_at": format_instant(row.last_event_at),
        "last_payload": dict(row.last_payload),
        "first_event_at": format_instant(row.first_event_at),
        "last_received_at": format_instant(row.last_received_at),
        "last_event_id": row.last_event_id,
    }


def snapshot_event_id(key: ResourceKey, boundary: datetime) -> str:
    """Deterministic, so that a retention run that is repeated stores each snapshot once."""
    text = f"{format_instant(boundary)}:{key.cloud}:{key.resource_type}:{key.resource_id}"
    return "retention-" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def snapshot_for(history: Iterable[StoredEvent], boundary: datetime) -> StoredEvent | None:
    """The snapshot at ``boundary`` of one key's ``history`` (every stored event of it); None when no
    event is dated before the boundary, or the key ended before it and has nothing after it (its
    record then lives on in the projection row and the usage archive alone)."""
    before = [e for e in history if e.event.timestamp < boundary]
    if not before:
        return None
    kept = [e for e in history if e.event.timestamp >= boundary]
    row = project(before)
    assert row is not None  # ``before`` holds an event
    folded = lifecycle(before)
    facts: dict[str, Any] = {
        "created_at": _opt(folded.created_at),
        "deleted_at": _opt(folded.deleted_at),
        "starts_without_create": HISTORY_STARTS_WITHOUT_CREATE in folded.warnings,
    }
    payload: dict[str, Any] = {"row": _row_document(row), "lifecycle": facts}
    open_interval = folded.intervals[-1] if folded.intervals and folded.intervals[-1].end is None else None
    if open_interval is not None:
        event_type, project_id = SNAPSHOT_LIVE, open_interval.project_id
        payload["state"] = open_interval.state
        payload["size"] = dict(open_interval.size)
    elif not kept:
        return None
    else:
        # The next create opens a run the usage counts exactly when one would have followed these events.
        counted = bool(folded.intervals) or folded.opened_by_create
        event_type = SNAPSHOT_ENDED if counted else SNAPSHOT_ENDED_UNOPENED
        project_id = row.project_id
    received = max(e.received_at for e in before)
    at_boundary = [e.received_at for e in kept if e.event.timestamp == boundary]
    if at_boundary and min(at_boundary) <= received:
        received = min(at_boundary) - ONE_MICROSECOND
    key = row.key
    event = Event(
        event_id=snapshot_event_id(key, boundary),
        timestamp=boundary,
        event_type=event_type,
        platform=row.platform,
        cloud=key.cloud,
        resource_type=key.resource_type,
        resource_id=key.resource_id,
        project_id=project_id,
        source=SNAPSHOT_SOURCE,
        payload=payload,
    )
    return StoredEvent(event, received)
