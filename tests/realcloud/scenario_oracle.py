"""The scenario's oracle from the services' records, judged against the store as the simulated month is.

Each recorded change (``scenario_records``) has a window, the seconds the service's records allow;
the oracle dates it at the one instant in the window where the store starts the same facts (or ends
the resource) by a booking that claims the platform's instant: a collector event, or a sync's
``missed create`` / ``reported delete`` dated at the instant the listing reports. The instant a
listing reports (``Change.reported``: nova's ``terminated_at``, to the second) counts as in the window
even where the phase that made the change began later in that second: the seeds book it there. A
change the store has nowhere in its window (lost, or booked at a poll) is dated at the window's start, and the
comparison of ``tally.simulator.compare`` decides under the month's rules: a poll-dated correction by
the first run that could book it is tolerated, anything else is off. Printed like ``tally simulate``:
a table per resource type, the totals, the causes, every differing span; and for each resource off,
its evidence (``evidence_lines``): the oracle's changes with their windows and the records they rest
on, the store's events with their sources, reasons and runs, and the runs' instants.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from scenario_records import Change, Facts, Records

from tally.core import Interval, StoredEvent, format_instant
from tally.simulator.compare import Comparison, StoredRecord, compare
from tally.simulator.oracle import Oracle, OracleInterval, OracleResource

PLATFORM_INSTANT_REASONS = frozenset({"missed create", "reported delete"})
Key = tuple[str, str]


def _norm(facts: Facts | None) -> Any:
    if facts is None:
        return None
    state, project, size = facts
    return (state, project, tuple(sorted((k, _number(v)) for k, v in size.items())))


def _number(value: Any) -> Any:
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    return Decimal(str(value)).normalize() if numeric else value


def _platform_dated(events: Sequence[StoredEvent], at: datetime) -> bool:
    for stored in events:
        event = stored.event
        if event.timestamp != at:
            continue
        provider = event.payload.get("provider") or {}
        if event.source != "reconciliation" or provider.get("reason") in PLATFORM_INSTANT_REASONS:
            return True
    return False


def stored_changes(
    intervals: Sequence[Interval], events: Sequence[StoredEvent]
) -> list[tuple[datetime, Any]]:
    """Where the store's facts change (None: the resource ends), booked at a platform instant."""
    points: list[tuple[datetime, Any]] = []
    previous: Interval | None = None
    for interval in intervals:
        facts = _norm((interval.state, interval.project_id, dict(interval.size)))
        if previous is not None and previous.end is not None and previous.end < interval.start:
            points.append((previous.end, None))
        before = (
            None
            if previous is None or previous.end != interval.start
            else _norm((previous.state, previous.project_id, dict(previous.size)))
        )
        if facts != before:
            points.append((interval.start, facts))
        previous = interval
    if previous is not None and previous.end is not None:
        points.append((previous.end, None))
    return [(at, facts) for at, facts in points if _platform_dated(events, at)]


def dated(
    changes: Sequence[Change], stored: Sequence[tuple[datetime, Any]]
) -> list[tuple[datetime, Facts | None]]:
    out = []
    for change in sorted(changes, key=lambda c: c.lo):
        want = _norm(change.facts)
        pinned = [
            at
            for at, facts in stored
            if facts == want and (change.lo <= at < change.hi or at == change.reported)
        ]
        out.append((pinned[0] if pinned else change.lo, change.facts))
    return out


def build_oracle(
    records: Records, record: StoredRecord, *, cloud: str, seed: int, period: tuple[datetime, datetime]
) -> Oracle:
    intervals = record.intervals()
    resources = []
    for key, changes in sorted(records.changes.items()):
        stored = stored_changes(intervals.get(key, ()), record.histories.get(key, ()))
        timeline = dated(changes, stored)
        spans = []
        for (at, facts), (until, _) in zip(timeline, [*timeline[1:], (period[1], None)], strict=True):
            if facts is not None and until > at:
                spans.append(OracleInterval(at, until, facts[0], facts[1], dict(facts[2])))
        resources.append(OracleResource(key[0], key[1], "scenario", tuple(spans)))
    return Oracle(cloud, seed, period[0], period[1], tuple(resources))


def of_project(record: StoredRecord, project: str) -> StoredRecord:
    """The store's resources any of whose events names the project (every other is another test's)."""
    histories = {
        key: events
        for key, events in record.histories.items()
        if any(e.event.project_id == project for e in events)
    }
    return StoredRecord(histories, record.runs)


def judge(
    records: Records,
    record: StoredRecord,
    *,
    cloud: str,
    seed: int,
    project: str,
    period: tuple[datetime, datetime],
) -> tuple[Oracle, Comparison]:
    mine = of_project(record, project)
    oracle = build_oracle(records, mine, cloud=cloud, seed=seed, period=period)
    return oracle, compare(oracle, mine, settle=timedelta(0), platform_created=records.platform_created)


def verdict_lines(comparison: Comparison, oracle: Oracle, runs: Mapping[str, int]) -> list[str]:
    """The verdicts as ``tally simulate`` prints them: per type, the totals, the causes, the spans."""
    by_type: dict[str, list[int]] = {}
    differing = {(r.resource_type, r.resource_id): r for r in comparison.resources}
    keys = {(r.resource_type, r.resource_id) for r in oracle.resources} | set(differing)
    for key in sorted(keys):
        row = by_type.setdefault(key[0], [0, 0, 0])
        diff = differing.get(key)
        row[0 if diff is None else 1 if diff.tolerated else 2] += 1
    lines = [f"{'type':<14} {'exact':>6} {'tolerated':>10} {'off':>5} {'oracle s':>10} {'stored s':>10}"]
    for rtype, (exact, tolerated, off) in sorted(by_type.items()):
        o, s = comparison.oracle_seconds.get(rtype, 0.0), comparison.stored_seconds.get(rtype, 0.0)
        lines.append(f"{rtype:<14} {exact:>6} {tolerated:>10} {off:>5} {o:>10.0f} {s:>10.0f}")
    lines += [
        f"resources exact / tolerated / off: {comparison.exact} / {comparison.tolerated} / {comparison.off}",
        "tolerated by cause: "
        + (", ".join(f"{k} {v}" for k, v in comparison.tolerated_by_cause.items()) or "none"),
        "off by cause: " + (", ".join(f"{k} {v}" for k, v in comparison.off_by_cause.items()) or "none"),
        f"billed-seconds error: {comparison.seconds_off:+.0f} s",
        "sync runs: " + ", ".join(f"{k} {v}" for k, v in sorted(runs.items())),
        f"{comparison.off} resources off",
    ]
    for r in comparison.resources:
        for d in r.differences:
            lines.append(
                f"  {r.resource_type} {r.resource_id} {format_instant(d.start)} .. {format_instant(d.end)} "
                f"{','.join(d.fields)}: {d.note()}"
            )
    return lines


def _facts_text(facts: Facts | None) -> str:
    if facts is None:
        return "gone"
    state, _, size = facts
    return f"{state} " + ",".join(f"{k}={v}" for k, v in sorted(size.items()))


def _event_text(stored: StoredEvent) -> str:
    event = stored.event
    provider = event.payload.get("provider") or {}
    why = [str(provider[k]) for k in ("reason", "sync_run_id") if provider.get(k)]
    facts = " ".join(f"{k}={event.payload[k]}" for k in ("state", "size") if k in event.payload)
    return (
        f"{format_instant(event.timestamp)} {event.event_type} [{event.source}{': ' if why else ''}"
        f"{' run '.join(why)}] {facts} (received {format_instant(stored.received_at)})"
    )


def evidence_lines(
    comparison: Comparison, records: Records, record: StoredRecord, began: Sequence[datetime] = ()
) -> list[str]:
    """For each resource off: what the oracle rests on and what the store holds, enough to tell from a
    log alone whether the store or the oracle is wrong; then the runs and when each phase began."""
    off = [r for r in comparison.resources if not r.tolerated]
    if not off:
        return []
    intervals = record.intervals()
    lines = ["evidence of the resources off:"]
    for r in off:
        key = (r.resource_type, r.resource_id)
        history = record.histories.get(key, ())
        changes = sorted(records.changes.get(key, []), key=lambda c: c.lo)
        at = dated(changes, stored_changes(intervals.get(key, ()), history))
        lines.append(f"  {r.resource_type} {r.resource_id}")
        for change, (when, _) in zip(changes, at, strict=True):
            lines.append(
                f"    oracle [{format_instant(change.lo)}, {format_instant(change.hi)}) dated "
                f"{format_instant(when)}: {_facts_text(change.facts)} <- {change.what}"
            )
        lines += [f"    store  {_event_text(e)}" for e in history]
    lines.append(
        "  runs: "
        + ", ".join(
            f"{run.run_id} at {format_instant(run.started_at)}{'' if run.completed else ' (failed)'}"
            for run in record.runs
        )
    )
    if began:
        lines.append("  phases began: " + ", ".join(format_instant(at) for at in began))
    return lines
