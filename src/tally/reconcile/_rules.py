"""The reconciliation's rules, one pure function each (seed 000, "What a run defers" and
"The instants a missed delete is booked at"; beyond it, what an earlier run vouched for).

Each function here is named after the rule it decides and has a test of the same
name; the diff only composes them. Nothing in this module reads a clock: the
run's instant (``poll_at``) is always passed in, because a told instant is the
run's one clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tally.core import ONE_MICROSECOND, Category, ResourceRow, StoredEvent, project

from ._model import Deferral, DeletedResource, EarlierRun, ObservedResource, ProjectionRow

DELETED_WINDOW_CLAMP = timedelta(hours=24)
MAX_ERRORS = 100
MAX_ERROR_BYTES = 4096


def inside_recent_window(instant: datetime | None, poll_at: datetime, settle_s: int) -> bool:
    """Whether a change at ``instant`` is too recent for this run to correct.

    The window is the ``settle_s`` seconds before the run's instant; an instant
    after the run's instant counts as inside (a platform clock ahead of ours, or a
    told instant behind the cloud's present). No instant is never recent, and a
    window of 0 turns the rule off.
    """
    if instant is None or settle_s <= 0:
        return False
    return instant >= poll_at - timedelta(seconds=settle_s)


def _row_recent(row: ProjectionRow | None, poll_at: datetime, settle_s: int) -> bool:
    return row is not None and inside_recent_window(row.last_event_at, poll_at, settle_s)


def deferral_of_create(
    observed: ObservedResource, row: ProjectionRow | None, poll_at: datetime, settle_s: int
) -> Deferral | None:
    """A create waits while the resource is in transition, or when the platform changed it inside
    the window, or when the row exists and its newest event is inside the window."""
    if observed.transitional:
        return Deferral.TRANSITIONAL
    if inside_recent_window(observed.changed_at, poll_at, settle_s) or _row_recent(row, poll_at, settle_s):
        return Deferral.RECENT
    return None


def deferral_of_update(
    observed: ObservedResource, row: ProjectionRow, poll_at: datetime, settle_s: int
) -> Deferral | None:
    """An update waits while the resource is in transition, or when the platform's change or the
    row's newest event is inside the window."""
    if observed.transitional:
        return Deferral.TRANSITIONAL
    if inside_recent_window(observed.changed_at, poll_at, settle_s) or _row_recent(row, poll_at, settle_s):
        return Deferral.RECENT
    return None


def deferral_of_reported_delete(
    deleted: DeletedResource, row: ProjectionRow, poll_at: datetime, settle_s: int
) -> Deferral | None:
    """A reported delete is never transitional; it waits when the deletion or the row's newest
    event is inside the window."""
    if inside_recent_window(deleted.deleted_at, poll_at, settle_s) or _row_recent(row, poll_at, settle_s):
        return Deferral.RECENT
    return None


def deferral_of_absence_delete(row: ProjectionRow, poll_at: datetime, settle_s: int) -> Deferral | None:
    """A delete by absence waits when the row's newest event is inside the window: an instance
    created after the listing answered but delivered before the rows were read exists."""
    if _row_recent(row, poll_at, settle_s):
        return Deferral.RECENT
    return None


def drift(observed: ObservedResource, row: ProjectionRow) -> dict[str, dict[str, Any]]:
    """The members in which the platform and the row differ, each with its old and new value.

    State and project compare as text, size by JSON deep equality; a size the
    platform did not describe counts as the same.
    """
    changes: dict[str, dict[str, Any]] = {}
    if observed.state != row.state:
        changes["state"] = {"old": row.state, "new": observed.state}
    if observed.project_id != row.project_id:
        changes["project_id"] = {"old": row.project_id, "new": observed.project_id}
    if observed.size is not None and not _json_equal(observed.size, row.size or {}):
        changes["size"] = {"old": dict(row.size or {}), "new": dict(observed.size)}
    return changes


# The member types a size's flat dict usually holds, compared with == as the deep walk below would.
_SCALARS = frozenset({str, int, float, type(None)})


def _json_equal(a: Any, b: Any) -> bool:
    # The common case first (a sync compares every live resource's size): two flat dicts whose members
    # have the same scalar types pairwise. Anything else (a bool, a nested value, an int beside a
    # float) takes the deep walk.
    if type(a) is dict and type(b) is dict and a.keys() == b.keys():
        for k, x in a.items():
            y = b[k]
            if type(x) is not type(y) or type(x) not in _SCALARS:
                break
            if x != y:
                return False
        else:
            return True
    # bool is an int in Python but not in JSON: true must not equal 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def create_instant(observed: ObservedResource, row: ProjectionRow | None, poll_at: datetime) -> datetime:
    """A create is dated at the platform's creation instant if the row never existed, else at the poll."""
    if row is None and observed.created_at is not None:
        return observed.created_at
    return poll_at


def create_missing_from_history(observed: ObservedResource, row: ProjectionRow | None) -> datetime | None:
    """The instant of the create a live row's history lacks, or None when it lacks none.

    A history that starts without a create (the collector lost it, and a later event arrived
    first) gets one at the platform's creation instant, when the platform reports one before the
    row's oldest event: the fold then orders it first, so every event of the history still decides
    what it decided, and the create only supplies the start and the facts no later event carries.
    """
    if row is None or not row.is_live or row.created_at is not None:
        return None
    first = row.first_event_at
    if observed.created_at is None or first is None or observed.created_at >= first:
        return None
    return observed.created_at


def whole_life_start(deleted: DeletedResource, row: ProjectionRow | None) -> datetime | None:
    """Where a whole life the bus missed starts, or None when the deletion is not one.

    A deletion the platform reported for a resource the projection holds no row of, and that the
    platform had put in use, is a life no event recorded: it is booked from the instant the platform
    put it in use (nova's launched_at) to its deletion. A resource never put in use (a server never
    launched) gets nothing, as the collector books nothing before the create's ``.end`` either.
    """
    if row is not None:
        return None
    return deleted.created_at


def deferral_of_whole_life(deleted: DeletedResource, poll_at: datetime, settle_s: int) -> Deferral | None:
    """A whole life is never transitional; it waits when its start or its deletion is inside the window
    (the next run's deleted-servers window opens a settle window early, so it still names it)."""
    if inside_recent_window(deleted.created_at, poll_at, settle_s) or inside_recent_window(
        deleted.deleted_at, poll_at, settle_s
    ):
        return Deferral.RECENT
    return None


def reported_delete_instant(deleted: DeletedResource) -> datetime:
    """A delete the platform reported is dated at the instant it reports (nova's terminated_at)."""
    return deleted.deleted_at


def poll_instant(poll_at: datetime) -> datetime:
    """An update and a delete by absence are dated at the run's instant."""
    return poll_at


def held_no_row(run: EarlierRun, first_received_at: datetime) -> bool:
    """Whether ``run`` read the projection before the resource's first event was received: it recorded
    the store's newest receipt then, and that is older than the resource's first (or there was none).
    A run that recorded nothing held no row only as far as nobody can tell, so it counts as False."""
    return run.rows_recorded and (run.rows_through is None or first_received_at > run.rows_through)


def absence_delete_instant(
    key: tuple[str, str],
    row: ProjectionRow,
    first_received_at: datetime | None,
    runs: Sequence[EarlierRun],
    poll_at: datetime,
    settle_s: int,
) -> datetime:
    """A delete by absence is dated at the earliest poll the record proves the resource gone, else at
    the run's own poll (beyond the reference, which always dates it at the poll).

    A run proves it gone when it completed, listed the key's type to the end, began more than the
    settle window after the resource's creation (the row's create, else its oldest event), held no
    row for the key when it read the projection, and neither booked nor deferred a correction for it.
    Had such a run's listing named the resource, the diff would have met a live resource with no row:
    it books a create (an event of that run for the key) or defers it (in its deferred resources), and
    a refused booking fails the run. So the listing did not name it, at an instant it already existed:
    it was gone. A run that held the row and found it alive and unchanged leaves no trace at all,
    which is why holding no row is required and must be read from the record.

    Whether a run held the row is decided by receipts, not instants: the run records the newest
    ``received_at`` of the store (``rows_through``) once it has read the rows, and it held no row when
    the key's first event was received after that. Both are instants the store wrote, so a told run's
    virtual ``started_at`` does not enter, and across replicas every error errs one way: an event the
    run read was committed before ``rows_through`` was read, so its receipt is not newer than it, and a
    receipt stamped by a clock behind the others, or committed late, only counts as held. A run that
    recorded no ``rows_through`` proves nothing.
    """
    created_at = row.created_at if row.created_at is not None else row.first_event_at
    if created_at is None or first_received_at is None:
        return poll_at
    resource_type = key[0]
    not_before = created_at + timedelta(seconds=max(settle_s, 0))
    for run in sorted(runs, key=lambda r: r.started_at):
        if run.started_at >= poll_at:
            break
        if (
            run.completed
            and resource_type in run.complete_types
            and run.started_at > not_before
            and held_no_row(run, first_received_at)
            and key not in run.corrected
        ):
            return run.started_at
    return poll_at


def _booked_by(stored: StoredEvent, run_id: str) -> bool:
    provider = stored.event.payload.get("provider")
    return isinstance(provider, Mapping) and provider.get("sync_run_id") == run_id


def _read_by(run: EarlierRun, stored: StoredEvent) -> bool:
    return run.rows_through is not None and stored.received_at <= run.rows_through


def arrived_behind(run: EarlierRun, history: Sequence[StoredEvent]) -> bool:
    """Whether an event of the history reached the store after ``run`` read the rows (and is not the
    run's own booking) but is dated before the run's instant: the run compared a row without it."""
    return run.rows_recorded and any(
        not _read_by(run, e) and not _booked_by(e, run.run_id) and e.event.timestamp < run.started_at
        for e in history
    )


def vouched_row(key: tuple[str, str], run: EarlierRun, history: Sequence[StoredEvent]) -> ResourceRow | None:
    """The row ``run`` vouched for at its instant, or None when it vouched for none.

    A run vouches for a key when it completed, listed the key's type to the end, recorded which rows it
    read, deferred no correction for the key and booked no delete of it, and held a live row (the events
    it read, with its own bookings) whose every event is dated by its instant, and booked no restore in
    place of its own drift update. Such a run met the row in
    its listing (a live row a complete listing does not name gets a delete by absence, booked or
    deferred) and either found no drift or booked it away: the row after its bookings showed what the
    platform listed at its instant. A row with an event dated after the instant was compared at facts
    newer than the instant, so it vouches for nothing there.
    """
    if not (run.completed and run.rows_recorded and key[0] in run.complete_types) or key in run.deferred:
        return None
    own = [e for e in history if _booked_by(e, run.run_id)]
    # A delete means the listing did not name it; an update dated before the run's instant is a restore
    # booked in place of the run's own drift update, so its row need not show what it listed.
    if any(
        e.event.category is Category.DELETE
        or (e.event.category is Category.UPDATE and e.event.timestamp < run.started_at)
        for e in own
    ):
        return None
    known = [e for e in history if _read_by(run, e) or _booked_by(e, run.run_id)]
    if any(e.event.timestamp > run.started_at for e in known):
        return None
    row = project(known)
    return row if row is not None and row.is_live else None


def folded_at(history: Sequence[StoredEvent], instant: datetime) -> ResourceRow | None:
    """The row the whole history folds to at ``instant``: every event dated by it, however late it came."""
    return project(e for e in history if e.event.timestamp <= instant)


def vouched_changes(vouched: ProjectionRow, folded: ProjectionRow) -> dict[str, dict[str, Any]]:
    """The members in which the folded record departs from what a run vouched for, each with the
    folded value as old and the vouched one as new (state and project as text, size as JSON)."""
    changes: dict[str, dict[str, Any]] = {}
    if vouched.state != folded.state:
        changes["state"] = {"old": folded.state, "new": vouched.state}
    if vouched.project_id != folded.project_id:
        changes["project_id"] = {"old": folded.project_id, "new": vouched.project_id}
    if not _json_equal(vouched.size or {}, folded.size or {}):
        changes["size"] = {"old": dict(folded.size or {}), "new": dict(vouched.size or {})}
    return changes


@dataclass(frozen=True, slots=True)
class VouchedRestore:
    """The update that puts back what an earlier run vouched for: at that run's instant, its row."""

    at: datetime
    row: ResourceRow
    changes: Mapping[str, Mapping[str, Any]]


def vouched_restore(
    key: tuple[str, str], history: Sequence[StoredEvent], runs: Sequence[EarlierRun], poll_at: datetime
) -> VouchedRestore | None:
    """The restore a late event calls for, at the earliest run it departs from, or None (beyond the
    reference, which never looks back).

    A run before ``poll_at`` calls for one when an event it did not see is dated before its instant
    (``arrived_behind``), it vouched for the key (``vouched_row``), and the whole history, late event
    included, folds to other facts at its instant while the resource was live (a late delete is not
    undone). The restore is the update that run would have booked had the event been there, dated at
    its poll. One per run and key: a later departure is left to the next run, which finds it the same
    way (this run's restore is itself an event behind the runs after it).
    """
    for run in sorted(runs, key=lambda r: r.started_at):
        if run.started_at >= poll_at:
            break
        if not arrived_behind(run, history):
            continue
        vouched = vouched_row(key, run, history)
        if vouched is None:
            continue
        folded = folded_at(history, run.started_at)
        if folded is None or not folded.is_live:
            continue
        changes = vouched_changes(vouched, folded)
        if changes:
            return VouchedRestore(run.started_at, vouched, changes)
    return None


def past_newest_event(instant: datetime, row: ProjectionRow | None) -> datetime:
    """A correction behind the row's newest event is dated 1 µs past it, so the fold orders it last."""
    if row is not None and instant < row.last_event_at:
        return row.last_event_at + ONE_MICROSECOND
    return instant


def delete_is_skipped(row: ProjectionRow | None) -> bool:
    """No delete for a row that does not exist or is already deleted: the first delete stands."""
    return row is None or not row.is_live


@dataclass(frozen=True, slots=True)
class DeletedWindow:
    """Where the deleted-servers listing opens; ``since`` None means no listing this run."""

    since: datetime | None
    widened: bool = False


def deleted_servers_window(bound: datetime | None, poll_at: datetime, settle_s: int) -> DeletedWindow:
    """The window of nova's deleted-servers listing.

    It opens at the last completed run's started_at less the settle window, down to its
    whole second, and is clamped to 24 hours behind the run's instant. The whole second,
    because nova stores its instants to the second: a server deleted in the bound's own
    second is stored at that second's start, before the bound, and a window opening at
    the bound itself would never list it (its delete would be dated at the poll). A cloud's
    first run (no bound) asks for none. A run told an instant behind the bound would ask
    for a window that has not happened yet, which nova answers empty: it asks for the whole
    24 hours behind its own instant instead (``widened``, logged at warn level).
    """
    if bound is None:
        return DeletedWindow(None)
    floor = poll_at - DELETED_WINDOW_CLAMP
    if poll_at < bound:
        return DeletedWindow(floor, widened=True)
    return DeletedWindow(max((bound - timedelta(seconds=settle_s)).replace(microsecond=0), floor))


def reported_within_run(deleted: DeletedResource, poll_at: datetime) -> bool:
    """A deletion dated after the run's instant is not the run's to date: nova's window has no upper
    end, so such a server is left to the absence pass, at the poll."""
    return deleted.deleted_at <= poll_at


def cap_errors(errors: Iterable[str]) -> list[str]:
    """At most 100 reasons, each cut to 4 KiB of UTF-8, so a failing cloud cannot bloat its row."""
    capped: list[str] = []
    for text in errors:
        if len(capped) == MAX_ERRORS:
            break
        raw = text.encode()
        if len(raw) > MAX_ERROR_BYTES:
            text = raw[:MAX_ERROR_BYTES].decode(errors="ignore")
        capped.append(text)
    return capped
