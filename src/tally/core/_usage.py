"""Usage of one resource in a window: what a bill is computed from, out of the lifecycle fold.

The events are folded by ``lifecycle`` (the very function the lifecycle route answers with), the
intervals are clipped to ``[start, end)`` and every piece is booked on a line of (project, state):
a resource that changed project is split where it changed, and an instance shut off is reported
apart from an active one, because the rating engine prices them apart.

A line holds presence in microseconds, and for every numeric size member the integral of its value
over time (member-microseconds): integers of microseconds times the member's JSON number, an
``int`` for an integer member and a ``Decimal`` for a fractional one, so nothing rounds.
``seconds_text`` turns either into the decimal seconds the API answers.
Creates and deletes count the starts and ends of presence inside the window: a run of intervals
that begins with a create, and one that a delete ends. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from ._event import StoredEvent
from ._fold import Interval
from ._lifecycle import lifecycle

# group_by members that price a resource, and the size member each reads for the types that have it.
PRICING_MEMBERS: Mapping[str, tuple[str, str]] = {
    "flavor": ("instance", "flavor"),
    "volume_type": ("volume", "type"),
}
USAGE_GROUPS = frozenset({"cloud", "resource_type", "project_id", *PRICING_MEMBERS})
_MICRO = Decimal(1_000_000)
Quantity = int | Decimal


@dataclass(frozen=True, slots=True)
class UsageWindow:
    """``[start, end)``; spans still open are counted up to ``upto`` (now, or ``as_of``), never past ``end``.

    ``as_of``: only events received before it count, so an answer given at that instant can be
    reproduced later.
    """

    start: datetime
    end: datetime
    upto: datetime
    as_of: datetime | None = None

    @property
    def clip(self) -> datetime:
        return min(self.end, self.upto)


@dataclass(slots=True)
class UsageLine:
    """Accumulated usage of one line (a resource's project and state, or a group and state)."""

    presence_us: int = 0
    quantities: dict[str, Quantity] = field(default_factory=dict)  # member -> member-microseconds
    creates: int = 0
    deletes: int = 0
    received_at: datetime | None = None

    def add(self, other: UsageLine) -> None:
        self.presence_us += other.presence_us
        for member, value in other.quantities.items():
            self.quantities[member] = self.quantities.get(member, 0) + value
        self.creates += other.creates
        self.deletes += other.deletes
        theirs = other.received_at
        if theirs is not None and (self.received_at is None or theirs > self.received_at):
            self.received_at = theirs


@dataclass(frozen=True, slots=True)
class UsagePiece:
    """One interval clipped to the window, with the run boundaries that fall inside the window."""

    interval: Interval
    microseconds: int
    creates: int
    deletes: int


def _number(value: Any) -> Quantity | None:
    # A JSON number as it was written: a float's repr is the shortest text that reads back as it.
    kind = type(value)
    if kind is int:
        return int(value)
    if kind is bool:
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, Decimal):
        return value
    return None


def numeric_members(size: Mapping[str, Any]) -> dict[str, Quantity]:
    """The size members a quantity is booked for: every number (booleans are not quantities)."""
    out: dict[str, Quantity] = {}
    for member, value in size.items():
        # Plain integers and texts first: nearly every member is one, and this runs once per line.
        kind = type(value)
        if kind is int:
            out[member] = value
        elif kind is not str:
            number = _number(value)
            if number is not None:
                out[member] = number
    return out


def _microseconds(start: datetime, end: datetime) -> int:
    delta = end - start
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def window_events(events: Iterable[StoredEvent], window: UsageWindow) -> list[StoredEvent]:
    """The events a window's usage folds: dated before its end, and received before ``as_of``."""
    as_of = window.as_of
    return [e for e in events if e.event.timestamp < window.end and (as_of is None or e.received_at < as_of)]


def pieces(events: Sequence[StoredEvent], window: UsageWindow) -> list[UsagePiece]:
    """The lifecycle of ``events`` (already cut by ``window_events``) clipped to the window."""
    folded = lifecycle(events)
    return clip(folded.intervals, window, first_is_create=folded.opened_by_create)


def clip(intervals: Sequence[Interval], window: UsageWindow, *, first_is_create: bool) -> list[UsagePiece]:
    """Intervals of one resource, in order, clipped to the window, with the creates and deletes in it."""
    start, end, upto = window.start, window.end, window.clip
    out: list[UsagePiece] = []
    for i, interval in enumerate(intervals):
        opens_run = i == 0 or intervals[i - 1].end != interval.start
        closes_run = interval.end is not None and (
            i + 1 == len(intervals) or intervals[i + 1].start != interval.end
        )
        creates = int(opens_run and (i > 0 or first_is_create) and start <= interval.start < end)
        deletes = int(closes_run and interval.end is not None and start <= interval.end < end)
        lo = max(interval.start, start)
        hi = upto if interval.end is None else min(interval.end, upto)
        micros = _microseconds(lo, hi) if hi > lo else 0
        if micros or creates or deletes:
            out.append(UsagePiece(interval, micros, creates, deletes))
    return out


def interval_usage(intervals: Sequence[Interval], window: UsageWindow) -> dict[tuple[str, str], UsageLine]:
    """Usage per (project_id, state) of intervals known otherwise than by a fold (an oracle's)."""
    lines: dict[tuple[str, str], UsageLine] = {}
    for piece in clip(intervals, window, first_is_create=True):
        key = (piece.interval.project_id, piece.interval.state)
        lines.setdefault(key, UsageLine()).add(piece_line(piece, None))
    return lines


def piece_line(piece: UsagePiece, received_at: datetime | None) -> UsageLine:
    micros = piece.microseconds
    return UsageLine(
        presence_us=micros,
        quantities={m: v * micros for m, v in numeric_members(piece.interval.size).items()},
        creates=piece.creates,
        deletes=piece.deletes,
        received_at=received_at,
    )


def resource_usage(
    events: Iterable[StoredEvent], window: UsageWindow, *, project_id: str | None = None
) -> dict[tuple[str, str], UsageLine]:
    """One resource's usage per (project_id, state); with ``project_id``, that project's lines only.

    Each line carries the newest ``received_at`` of the events the window folded, so that a late
    event or a correction shows on every line it may have changed.
    """
    kept = window_events(events, window)
    if not kept:
        return {}
    newest = max(e.received_at for e in kept) if len(kept) > 1 else kept[0].received_at
    lines: dict[tuple[str, str], UsageLine] = {}
    for piece in pieces(kept, window):
        interval = piece.interval
        if project_id is not None and interval.project_id != project_id:
            continue
        key = (interval.project_id, interval.state)
        line = lines.get(key)
        if line is None:
            lines[key] = piece_line(piece, newest)
        else:
            line.add(piece_line(piece, newest))
    return lines


def group_values_of(
    group_by: Sequence[str], cloud: str, resource_type: str, project_id: str, size: Mapping[str, Any]
) -> tuple[str | None, ...]:
    """The values of ``group_by`` members (``USAGE_GROUPS``) for one interval (its project and size)."""
    values: list[str | None] = []
    for member in group_by:
        if member == "cloud":
            values.append(cloud)
        elif member == "resource_type":
            values.append(resource_type)
        elif member == "project_id":
            values.append(project_id)
        else:
            rtype, size_member = PRICING_MEMBERS[member]
            value = size.get(size_member) if resource_type == rtype else None
            values.append(None if value is None else str(value))
    return tuple(values)


GroupKey = tuple[tuple[str | None, ...], str]  # (group values, state)


def add_group_usage(
    totals: dict[GroupKey, UsageLine],
    group_by: Sequence[str],
    cloud: str,
    resource_type: str,
    events: Iterable[StoredEvent],
    window: UsageWindow,
    *,
    project_id: str | None = None,
) -> None:
    """Book one resource's usage on the lines of its groups (and states) in ``totals``."""
    kept = window_events(events, window)
    if not kept:
        return
    newest = max(e.received_at for e in kept)
    for piece in pieces(kept, window):
        interval = piece.interval
        if project_id is not None and interval.project_id != project_id:
            continue
        values = group_values_of(group_by, cloud, resource_type, interval.project_id, interval.size)
        key = (values, interval.state)
        totals.setdefault(key, UsageLine()).add(piece_line(piece, newest))


def seconds_text(micro_quantity: Quantity) -> str:
    """Microseconds (or member-microseconds) as exact decimal seconds: ``72000``, ``1.5``, ``0.000001``."""
    if type(micro_quantity) is int:
        whole, micros = divmod(abs(micro_quantity), 1_000_000)
        sign = "-" if micro_quantity < 0 else ""
        return f"{sign}{whole}" if not micros else f"{sign}{whole}.{micros:06d}".rstrip("0")
    value = Decimal(micro_quantity) / _MICRO
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text
