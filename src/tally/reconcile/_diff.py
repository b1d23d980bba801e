"""The diff: an observation against the projection rows, by key in sorted order.

Level-based: the input is what the cloud holds now and what the projection
holds now, nothing remembered from an earlier run. Each key gets at most one
correction of each kind, decided by the rules of ``_rules``: usually one in all,
two where one run finds a key needing both (a whole life the bus missed is a
create and a delete; a history without a create can also have drifted). A
deferred correction counts once, as transitional when both reasons hold.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from tally.core import ResourceRow, StoredEvent
from tally.store import SyncRow

from ._model import (
    Correction,
    Deferral,
    DeferredCorrection,
    DeletedResource,
    EarlierRun,
    Kind,
    Observation,
    ObservedResource,
    Plan,
    ProjectionRow,
    Reason,
)
from ._rules import (
    absence_delete_instant,
    create_instant,
    create_missing_from_history,
    deferral_of_absence_delete,
    deferral_of_create,
    deferral_of_reported_delete,
    deferral_of_update,
    deferral_of_whole_life,
    delete_is_skipped,
    drift,
    past_newest_event,
    poll_instant,
    reported_delete_instant,
    reported_within_run,
    vouched_restore,
    whole_life_start,
)

Key = tuple[str, str]


def _key_of(row: SyncRow | ResourceRow) -> Key:
    if isinstance(row, SyncRow):
        return row.resource_type, row.resource_id
    return row.key.resource_type, row.key.resource_id


def _create(
    resource_type: str,
    resource_id: str,
    project_id: str,
    at: datetime,
    state: str | None,
    size: Mapping[str, object] | None,
    requested_at: datetime | None = None,
) -> Correction:
    """A ``missed create`` correction; a size the platform did not describe is booked empty."""
    return Correction(
        Kind.CREATE,
        Reason.MISSED_CREATE,
        resource_type,
        resource_id,
        project_id,
        at,
        state=state,
        size=dict(size) if size is not None else {},
        requested_at=requested_at,
    )


def _dated(instant: datetime, row: ProjectionRow | None) -> tuple[datetime, datetime | None]:
    final = past_newest_event(instant, row)
    return final, (instant if final != instant else None)


def diff(
    observation: Observation, rows: Iterable[SyncRow | ResourceRow], *, poll_at: datetime, settle_s: int
) -> Plan:
    """Decide the corrections of one run; pure, deterministic, in (resource_type, resource_id) order.

    ``rows`` are the projection's rows of the cloud (the store's slim ``sync_rows`` in a run, full rows
    in tests); rows of a type the observation did not enumerate are ignored."""
    types = observation.enumerated_types
    by_key: dict[Key, ProjectionRow] = {}
    for r in rows:
        key = _key_of(r)
        if key[0] in types:
            by_key[key] = r
    live: dict[Key, ObservedResource] = {(o.resource_type, o.resource_id): o for o in observation.resources}
    gone: dict[Key, DeletedResource] = {
        (d.resource_type, d.resource_id): d
        for d in observation.deleted
        if reported_within_run(d, poll_at) and (d.resource_type, d.resource_id) not in live
    }
    complete = observation.complete_types
    corrections: list[Correction] = []
    deferred: Counter[Deferral] = Counter()
    waiting: list[DeferredCorrection] = []

    for key in _in_order(by_key, live, gone):
        row = by_key.get(key)
        observed = live.get(key)
        if observed is not None and row is not None and _settled(observed, row):
            continue
        # A key's decisions in the order their corrections are dated: (kind, correction, deferral).
        decided: list[tuple[Kind, Correction | None, Deferral | None]] = []
        if observed is not None:
            decided.append((Kind.CREATE, *_for_missing_create(observed, row, poll_at, settle_s)))
            kind = Kind.CREATE if row is None or not row.is_live else Kind.UPDATE
            decided.append((kind, *_for_observed(observed, row, poll_at, settle_s)))
        elif key in gone:
            start = whole_life_start(gone[key], row)
            if start is not None:
                decided.extend(_for_whole_life(gone[key], start, poll_at, settle_s))
            else:
                decided.append((Kind.DELETE, *_for_reported_delete(gone[key], row, poll_at, settle_s)))
        elif row is not None and row.is_live and key[0] in complete:
            decided.append((Kind.DELETE, *_for_absent(key, row, poll_at, settle_s)))
        for kind, correction, why in decided:
            if why is not None:
                deferred[why] += 1
                waiting.append(DeferredCorrection(key[0], key[1], kind, why))
            elif correction is not None:
                corrections.append(correction)
    return Plan(tuple(corrections), {d: deferred.get(d, 0) for d in Deferral}, tuple(waiting))


def _in_order(*by: Mapping[Key, object]) -> list[Key]:
    """The keys of ``by``, each once, sorted. The rows come in key order and most keys of a run are in
    the largest mapping, so the list starts as its keys: sorting a list that is nearly in order costs
    a pass over it, where the union of the key sets sorted from scratch costs a sort."""
    first = max(by, key=len)
    keys = list(first)
    extra: set[Key] = set()
    for other in by:
        if other is not first:
            extra.update(k for k in other if k not in first)
    keys.extend(extra)
    keys.sort()
    return keys


def _settled(observed: ObservedResource, row: ProjectionRow) -> bool:
    """The common case of a steady run, decided without the decisions' bookkeeping: a live row with its
    create, which the platform lists as the row holds it, needs no correction."""
    return row.is_live and row.created_at is not None and not drift(observed, row)


def _for_missing_create(
    observed: ObservedResource, row: ProjectionRow | None, poll_at: datetime, settle_s: int
) -> tuple[Correction | None, Deferral | None]:
    at = create_missing_from_history(observed, row)
    if at is None:
        return None, None
    why = deferral_of_create(observed, row, poll_at, settle_s)
    if why is not None:
        return None, why
    # Dated behind the row's oldest event on purpose: ordered first, it decides only the start and
    # the facts no later event of the history carries. Those are the facts the collector's own create
    # would have carried where the platform defines them: the history's events change them from there.
    size = observed.created_size if observed.created_size is not None else observed.size
    state = observed.created_state or observed.state
    return _create(observed.resource_type, observed.resource_id, observed.project_id, at, state, size), None


def _for_whole_life(
    deleted: DeletedResource, start_at: datetime, poll_at: datetime, settle_s: int
) -> list[tuple[Kind, Correction | None, Deferral | None]]:
    why = deferral_of_whole_life(deleted, poll_at, settle_s)
    if why is not None:
        return [(Kind.CREATE, None, why), (Kind.DELETE, None, why)]
    start = _create(
        deleted.resource_type, deleted.resource_id, deleted.project_id, start_at, deleted.state, deleted.size
    )
    end = Correction(
        Kind.DELETE,
        Reason.REPORTED_DELETE,
        deleted.resource_type,
        deleted.resource_id,
        deleted.project_id,
        reported_delete_instant(deleted),
    )
    return [(Kind.CREATE, start, None), (Kind.DELETE, end, None)]


def _for_observed(
    observed: ObservedResource, row: ProjectionRow | None, poll_at: datetime, settle_s: int
) -> tuple[Correction | None, Deferral | None]:
    if row is None or not row.is_live:
        why = deferral_of_create(observed, row, poll_at, settle_s)
        if why is not None:
            return None, why
        at, requested = _dated(create_instant(observed, row, poll_at), row)
        return _create(
            observed.resource_type,
            observed.resource_id,
            observed.project_id,
            at,
            observed.state,
            observed.size,
            requested,
        ), None
    changes = drift(observed, row)
    if not changes:
        return None, None
    why = deferral_of_update(observed, row, poll_at, settle_s)
    if why is not None:
        return None, why
    at, requested = _dated(poll_instant(poll_at), row)
    return Correction(
        Kind.UPDATE,
        Reason.DRIFT,
        observed.resource_type,
        observed.resource_id,
        observed.project_id,
        at,
        state=observed.state,
        size=dict(observed.size) if "size" in changes and observed.size is not None else None,
        changes=changes,
        requested_at=requested,
    ), None


def _for_reported_delete(
    deleted: DeletedResource, row: ProjectionRow | None, poll_at: datetime, settle_s: int
) -> tuple[Correction | None, Deferral | None]:
    if row is None or delete_is_skipped(row):
        return None, None
    why = deferral_of_reported_delete(deleted, row, poll_at, settle_s)
    if why is not None:
        return None, why
    at, requested = _dated(reported_delete_instant(deleted), row)
    return Correction(
        Kind.DELETE,
        Reason.REPORTED_DELETE,
        deleted.resource_type,
        deleted.resource_id,
        row.project_id,
        at,
        requested_at=requested,
    ), None


def _for_absent(
    key: Key, row: ProjectionRow, poll_at: datetime, settle_s: int
) -> tuple[Correction | None, Deferral | None]:
    why = deferral_of_absence_delete(row, poll_at, settle_s)
    if why is not None:
        return None, why
    at, requested = _dated(poll_instant(poll_at), row)
    return Correction(
        Kind.DELETE,
        Reason.ABSENT,
        key[0],
        key[1],
        row.project_id,
        at,
        requested_at=requested,
    ), None


def date_absence_deletes(
    plan: Plan,
    rows: Mapping[Key, ProjectionRow],
    first_received: Mapping[Key, datetime],
    runs: Sequence[EarlierRun],
    *,
    poll_at: datetime,
    settle_s: int,
) -> Plan:
    """``plan`` with each delete by absence dated at the earliest poll that proves the resource gone
    (``absence_delete_instant``), still past its row's newest event; every other correction as it was.

    ``rows`` and ``first_received`` need only hold the keys of those deletes, and ``runs`` the cloud's
    runs between their creation and this run."""
    corrections: list[Correction] = []
    for correction in plan.corrections:
        key = (correction.resource_type, correction.resource_id)
        row = rows.get(key)
        if correction.reason is Reason.ABSENT and row is not None:
            proven = absence_delete_instant(key, row, first_received.get(key), runs, poll_at, settle_s)
            at, requested = _dated(proven, row)
            correction = dataclasses.replace(correction, timestamp=at, requested_at=requested)
        corrections.append(correction)
    return dataclasses.replace(plan, corrections=tuple(corrections))


_KIND_ORDER = {Kind.CREATE: 0, Kind.UPDATE: 1, Kind.DELETE: 2}


def restore_vouched_facts(
    plan: Plan,
    histories: Mapping[Key, Sequence[StoredEvent]],
    runs: Sequence[EarlierRun],
    *,
    poll_at: datetime,
) -> Plan:
    """``plan`` with, per key of ``histories`` a late event made depart from what an earlier run vouched
    for (``vouched_restore``), a drift update dated at that run's poll restoring its row.

    The restore takes the place of this run's own drift update of the key, if any (one update per run
    and key): that drift is level-based, so the next run finds it again where it still holds, while
    the departure is found only by the runs after the late event arrived. ``histories`` need only hold
    the keys with a late event, and ``runs`` the cloud's runs since the oldest of those events."""
    restores: dict[Key, Correction] = {}
    for key, history in histories.items():
        found = vouched_restore(key, history, runs, poll_at)
        if found is None:
            continue
        row = found.row
        restores[key] = Correction(
            Kind.UPDATE,
            Reason.DRIFT,
            key[0],
            key[1],
            row.project_id,
            found.at,
            state=row.state,
            size=dict(row.size) if "size" in found.changes else None,
            changes=found.changes,
        )
    if not restores:
        return plan
    kept = [
        c
        for c in plan.corrections
        if not (c.kind is Kind.UPDATE and (c.resource_type, c.resource_id) in restores)
    ]
    corrections = sorted(
        [*kept, *restores.values()], key=lambda c: (c.resource_type, c.resource_id, _KIND_ORDER[c.kind])
    )
    return dataclasses.replace(plan, corrections=tuple(corrections))
