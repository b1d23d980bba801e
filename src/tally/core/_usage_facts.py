"""Usage straight from the rows a store streams: the export's hot path, with ``resource_usage``'s answer.

A month of a large cloud is hundreds of thousands of histories, most of one or two events. Building
an ``Event`` and a ``StoredEvent`` per row, then ``Interval`` and ``UsagePiece`` dataclasses per span,
costs more than the arithmetic itself, so this module folds light tuples (``UsageFact``: the seven
members the fold reads, as the store hands them) with the very rules of ``lifecycle`` and ``clip``,
transcribed onto tuples: same order, same zero-length and merge rules, same run boundaries, same
``numeric_members``, and the same sums in the same order, so that ``Decimal`` rounding cannot differ.

The lifecycle stays the one truth: ``tests/core/test_usage_facts.py`` generates histories (orders,
ties, duplicates, deletes and revivals, project moves, fractional sizes, windows and ``as_of``) and
requires ``fact_usage`` and ``add_fact_group_usage`` to answer exactly what ``resource_usage`` and
``add_group_usage`` answer over the same events. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from operator import itemgetter
from typing import Any

from ._event import Category, Event, StoredEvent, category_of
from ._fold import SNAPSHOT_SOURCE, SNAPSHOT_TYPES
from ._usage import (
    GroupKey,
    UsageLine,
    UsageWindow,
    _microseconds,
    group_values_of,
    numeric_members,
    pieces,
    window_events,
)

# (timestamp, received_at, event_id, event_type, project_id, state, size): ``state`` and ``size`` are
# the payload's members as the store extracted them (None when absent); the fold reads a state only
# if it is a text and a size only if it is a mapping, as ``Event.state`` and ``Event.size`` do.
UsageFact = tuple[datetime, datetime, str, str, str, Any, Any]

# (project_id, state, size, microseconds, creates, deletes) of one interval clipped to the window.
FactPiece = tuple[str, str, Mapping[str, Any], int, int, int]

_fold_key = itemgetter(0, 1, 2)  # fold_order: (timestamp, received_at, event_id)
_CREATE, _DELETE, _UPDATE = Category.CREATE, Category.DELETE, Category.UPDATE
_EMPTY: Mapping[str, Any] = {}


def usage_fact(stored: StoredEvent) -> UsageFact:
    """The fact of one stored event: what a store streams for it."""
    event = stored.event
    payload = event.payload
    return (
        event.timestamp,
        stored.received_at,
        event.event_id,
        event.event_type,
        event.project_id,
        payload.get("state"),
        payload.get("size"),
    )


def _intervals(
    facts: Sequence[UsageFact],
) -> list[tuple[datetime, datetime | None, str, Mapping[str, Any], str]]:
    """``lifecycle``'s intervals of facts already in fold order: (start, end, state, size, project)."""
    closed: list[tuple[datetime, datetime | None, str, Mapping[str, Any], str]] = []
    # The open interval, as (start, state, size, project); None between a delete and a create.
    current: tuple[datetime, str, Mapping[str, Any], str] | None = None
    deleted = False
    for at, _received, _event_id, event_type, project, state, size in facts:
        category = category_of(event_type)
        if category is _DELETE:
            if not deleted:
                if current is not None and at > current[0]:
                    closed.append((current[0], at, current[1], current[2], current[3]))
                current = None
                deleted = True
            continue
        if deleted:
            if category is _UPDATE:
                continue
            deleted = False
        if not isinstance(state, str):
            state = current[1] if current is not None else ""
        if not (type(size) is dict or isinstance(size, Mapping)):
            size = current[2] if current is not None else _EMPTY
        if current is not None:
            if current[1] == state and current[2] == size and current[3] == project:
                continue
            if at > current[0]:
                closed.append((current[0], at, current[1], current[2], current[3]))
        # A span dropped for zero length must not split the interval around it in two.
        if closed:
            last = closed[-1]
            if last[1] == at and last[2] == state and last[3] == size and last[4] == project:
                closed.pop()
                current = (last[0], last[2], last[3], last[4])
                continue
        current = (at, state, size, project)
    if current is not None:
        closed.append((current[0], None, current[1], current[2], current[3]))
    return closed


def _one_piece(fact: UsageFact, window: UsageWindow) -> tuple[list[FactPiece], datetime | None]:
    """``fact_pieces`` of a history of one event (most of a month's): one interval, open, or none."""
    at, received, _event_id, event_type, project, state, size = fact
    if not at < window.end or (window.as_of is not None and not received < window.as_of):
        return [], None
    category = category_of(event_type)
    if category is _DELETE:
        return [], received
    if not isinstance(state, str):
        state = ""
    if not (type(size) is dict or isinstance(size, Mapping)):
        size = _EMPTY
    start = window.start
    creates = int(category is _CREATE and start <= at)  # at < end: checked above
    lo = at if at > start else start
    upto = window.clip
    micros = _microseconds(lo, upto) if upto > lo else 0
    if micros or creates:
        return [(project, state, size, micros, creates, 0)], received
    return [], received


def fact_pieces(facts: Sequence[UsageFact], window: UsageWindow) -> tuple[list[FactPiece], datetime | None]:
    """One resource's intervals clipped to the window, and the newest ``received_at`` the window folded.

    ``facts`` in any order; those dated from the window's end on, or received from ``as_of`` on, are
    left out, as ``window_events`` leaves them. (None for the newest when none is left.)"""
    end, as_of = window.end, window.as_of
    if any(f[3] in SNAPSHOT_TYPES for f in facts):
        return _reference_pieces(facts, window)
    if len(facts) == 1:
        return _one_piece(facts[0], window)
    kept = [f for f in facts if f[0] < end and (as_of is None or f[1] < as_of)]
    if not kept:
        return [], None
    if len(kept) > 1:
        kept.sort(key=_fold_key)
        newest = max(f[1] for f in kept)
    else:
        newest = kept[0][1]
    intervals = _intervals(kept)
    first_is_create = category_of(kept[0][3]) is _CREATE
    start, upto = window.start, window.clip
    out: list[FactPiece] = []
    count = len(intervals)
    for i, (lo, hi, state, size, project) in enumerate(intervals):
        opens_run = i == 0 or intervals[i - 1][1] != lo
        creates = int(opens_run and (i > 0 or first_is_create) and start <= lo < end)
        deletes = int(hi is not None and (i + 1 == count or intervals[i + 1][0] != hi) and start <= hi < end)
        if lo < start:
            lo = start
        top = upto if hi is None or hi > upto else hi
        micros = _microseconds(lo, top) if top > lo else 0
        if micros or creates or deletes:
            out.append((project, state, size, micros, creates, deletes))
    return out, newest


def _reference_pieces(
    facts: Sequence[UsageFact], window: UsageWindow
) -> tuple[list[FactPiece], datetime | None]:
    """A history that continues from a retention snapshot, folded by ``lifecycle`` itself: rare (one
    per resource and retired month) and with rules of its own, so not transcribed. The types are
    reserved to retention (``parse_event`` refuses them), so a fact of one is a snapshot."""
    events = [
        StoredEvent(
            Event(
                event_id=f[2],
                timestamp=f[0],
                event_type=f[3],
                platform="",
                cloud="",
                resource_type="",
                resource_id="",
                project_id=f[4],
                source=SNAPSHOT_SOURCE if f[3] in SNAPSHOT_TYPES else "collector",
                payload={
                    name: value for name, value in (("state", f[5]), ("size", f[6])) if value is not None
                },
            ),
            f[1],
        )
        for f in facts
    ]
    kept = window_events(events, window)
    if not kept:
        return [], None
    out: list[FactPiece] = []
    for piece in pieces(kept, window):
        interval = piece.interval
        out.append(
            (
                interval.project_id,
                interval.state,
                interval.size,
                piece.microseconds,
                piece.creates,
                piece.deletes,
            )
        )
    return out, max(e.received_at for e in kept)


def _book(line: UsageLine, piece: FactPiece) -> None:
    micros = piece[3]
    line.presence_us += micros
    quantities = line.quantities
    for member, value in numeric_members(piece[2]).items():
        quantities[member] = quantities.get(member, 0) + value * micros
    line.creates += piece[4]
    line.deletes += piece[5]


def fact_usage(
    facts: Sequence[UsageFact], window: UsageWindow, *, project_id: str | None = None
) -> dict[tuple[str, str], UsageLine]:
    """``resource_usage`` of the same events: one resource's usage per (project_id, state)."""
    pieces, newest = fact_pieces(facts, window)
    lines: dict[tuple[str, str], UsageLine] = {}
    for piece in pieces:
        if project_id is not None and piece[0] != project_id:
            continue
        key = (piece[0], piece[1])
        line = lines.get(key)
        if line is None:
            line = lines[key] = UsageLine(received_at=newest)
        _book(line, piece)
    return lines


def add_fact_group_usage(
    totals: dict[GroupKey, UsageLine],
    group_by: Sequence[str],
    cloud: str,
    resource_type: str,
    facts: Sequence[UsageFact],
    window: UsageWindow,
    *,
    project_id: str | None = None,
) -> None:
    """``add_group_usage`` of the same events: book one resource on the lines of its groups."""
    pieces, newest = fact_pieces(facts, window)
    for piece in pieces:
        if project_id is not None and piece[0] != project_id:
            continue
        values = group_values_of(group_by, cloud, resource_type, piece[0], piece[2])
        key = (values, piece[1])
        line = totals.get(key)
        if line is None:
            line = totals[key] = UsageLine()
        _book(line, piece)
        if newest is not None and (line.received_at is None or newest > line.received_at):
            line.received_at = newest
