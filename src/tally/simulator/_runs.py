"""The sync runs a store records, as the compare reads them: which run could book which correction.

A correction the seeds date at its poll (a ``sync.update``, a ``sync.delete`` found by absence) is
right only when the run that booked it is the first run that could: completed, listing the type to
the end, started once the change was outside the settle window, and not deferring the resource.
This module turns ``Store.list_sync_runs`` documents into :class:`SyncRun` values and answers that
question. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from tally.core import InstantError, parse_instant


class SyncRunError(ValueError):
    """A sync run document the compare cannot read; the message names the run and the member."""


@dataclass(frozen=True, slots=True)
class SyncRun:
    """One run of the cloud: its told instant, whether it may book, what it deferred."""

    run_id: str
    started_at: datetime
    completed: bool
    complete_types: frozenset[str]
    deferred: frozenset[tuple[str, str]]

    def may_book(self, resource_type: str, resource_id: str) -> bool:
        """Completed, complete for the type, and not deferring the resource."""
        return (
            self.completed
            and resource_type in self.complete_types
            and (resource_type, resource_id) not in self.deferred
        )


def _deferred(doc: object, where: str) -> frozenset[tuple[str, str]]:
    if not isinstance(doc, list):
        raise SyncRunError(f"{where}: stats.deferred_resources must be an array")
    out = set()
    for item in doc:
        if not isinstance(item, Mapping) or not {"resource_type", "resource_id"} <= set(item):
            raise SyncRunError(f"{where}: a deferred resource lacks resource_type or resource_id")
        out.add((str(item["resource_type"]), str(item["resource_id"])))
    return frozenset(out)


def read_run(doc: Mapping[str, Any]) -> SyncRun:
    """A run as ``Store.list_sync_runs`` (or the API's sync-runs read) gives it."""
    where = f"sync run {doc.get('id')!r}"
    started = doc.get("started_at")
    try:
        started_at = started if isinstance(started, datetime) else parse_instant(started)  # type: ignore[arg-type]
    except InstantError:
        raise SyncRunError(f"{where}: started_at is not an instant: {started!r}") from None
    stats = doc.get("stats") or {}
    if not isinstance(stats, Mapping):
        raise SyncRunError(f"{where}: stats must be an object")
    complete = stats.get("complete_types", [])
    if not isinstance(complete, list):
        raise SyncRunError(f"{where}: stats.complete_types must be an array")
    return SyncRun(
        run_id=str(doc.get("id")),
        started_at=started_at,
        completed=doc.get("status") == "completed",
        complete_types=frozenset(str(t) for t in complete),
        deferred=_deferred(stats.get("deferred_resources", []), where),
    )


def read_runs(docs: Iterable[Mapping[str, Any]]) -> tuple[SyncRun, ...]:
    """Every run, oldest told instant first."""
    return tuple(sorted((read_run(d) for d in docs), key=lambda r: r.started_at))


def first_update_run(
    runs: Sequence[SyncRun], resource_type: str, resource_id: str, changed_at: datetime, settle: timedelta
) -> SyncRun | None:
    """The first run that could book an update of a change at ``changed_at``: one that began with
    the change outside its settle window (any run at or after it when the window is off)."""
    for run in runs:
        outside = (
            run.started_at >= changed_at if settle <= timedelta(0) else changed_at < run.started_at - settle
        )
        if outside and run.may_book(resource_type, resource_id):
            return run
    return None


def first_absence_run(
    runs: Sequence[SyncRun],
    resource_type: str,
    resource_id: str,
    deleted_at: datetime,
    first_event_at: datetime,
    settle: timedelta,
) -> SyncRun | None:
    """The first run that proves the resource gone: at or after the deletion, begun once the
    resource's creation is outside the settle window, and not deferring it."""
    for run in runs:
        if run.started_at < deleted_at or run.started_at < first_event_at + settle:
            continue
        if run.may_book(resource_type, resource_id):
            return run
    return None


def failed_run_could_book(
    run: SyncRun,
    resource_type: str,
    resource_id: str,
    changed_at: datetime,
    first_event_at: datetime | None,
    settle: timedelta,
) -> bool:
    """Whether a failed run booked a correction it could: a run keeps the corrections of the types it
    listed to the end when another type's listing failed (docs/reconciliation.md, "Failures"), so a
    failed run that listed the type, after the change, without deferring the resource, books it as
    well as a completed one would. (Failed runs never count as proof of an earlier absence.)"""
    if run.completed:
        return False
    as_listed = (replace(run, completed=True),)
    if first_event_at is None:
        return first_update_run(as_listed, resource_type, resource_id, changed_at, settle) is not None
    found = first_absence_run(as_listed, resource_type, resource_id, changed_at, first_event_at, settle)
    return found is not None
