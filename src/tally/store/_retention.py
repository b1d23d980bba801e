"""Retention of events on PostgreSQL: closed months archived, snapshotted, then detached (or dropped).

With ``TALLY_EVENTS_RETENTION_MONTHS=N`` the current month and the N before it stay in ``events``; an
older month M is retired in one transaction, oldest first:

1. its usage, per resource and (project, state), as the usage export answers it for [M, M+1), goes to
   ``usage_archive`` (``archived_usage`` reads it back): the usage of a closed month stays answerable;
2. every key with an event in M (or in the default partition before M+1) gets a snapshot at M+1
   (``tally.core.snapshot_for``), stored in M+1's partition: the folds of what stays (lifecycle,
   projection replays, usage of the months kept) give what they gave with M in place;
3. the partition is detached, given back its append-only trigger and kept as the table
   ``events_pYYYYMM``, or dropped with ``TALLY_EVENTS_RETENTION_DROP``; ``retired_months`` records it.

``retention_refusal`` names what forbids a policy (checked before the daemon starts, and before each
round): a cloud with live resources whose last completed sync started before the boundary (its next
run may book corrections dated in the months to retire, which the snapshot would then hide), and a
drop of a detached month table that retention never archived. See docs/scaling.md.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from tally.core import ResourceKey, StoredEvent, UsageLine, UsageWindow, resource_usage, snapshot_for

from ._partitions import (
    DEFAULT_PARTITION,
    PARENT,
    add_months,
    attached_months,
    detached_months,
    make_month,
    month_start,
    partition_name,
    retired,
)
from ._seam import Tx

if TYPE_CHECKING:
    from ._postgres import PostgresDialect

log = logging.getLogger(__name__)

KEY_CHUNK = 500  # keys whose histories are folded at once: memory holds one chunk's events


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """``months`` None keeps everything; ``drop`` drops a retired month's table instead of keeping it."""

    months: int | None = None
    drop: bool = False


@dataclass(frozen=True, slots=True)
class RetiredMonth:
    month: datetime
    events: int
    snapshots: int
    usage_lines: int
    dropped: bool


def retention_boundary(now: datetime, months: int) -> datetime:
    """The first instant kept: the start of the month ``months`` before the current one."""
    return add_months(month_start(now), -months)


def months_to_retire(attached: set[datetime], boundary: datetime) -> list[datetime]:
    """The attached months that end at or before the boundary, oldest first."""
    return sorted(m for m in attached if add_months(m, 1) <= boundary)


def _month_text(month: datetime) -> str:
    return f"{month.year:04d}-{month.month:02d}"


async def retention_refusal(tx: Tx, policy: RetentionPolicy, now: datetime) -> str | None:
    """Why ``policy`` must not run on this store now (one line naming the setting), or None."""
    if policy.months is None:
        return None
    boundary = retention_boundary(now, policy.months)
    recs = await tx.fetchall(
        "SELECT r.cloud, max(s.started_at) FILTER (WHERE s.status = 'completed') "
        "FROM (SELECT DISTINCT cloud FROM current_resources WHERE deleted_at IS NULL) AS r "
        "JOIN sync_runs AS s ON s.cloud = r.cloud GROUP BY r.cloud ORDER BY r.cloud"
    )
    for cloud, last in recs:
        if last is None or last < boundary:
            seen = "never" if last is None else f"last at {last.astimezone(UTC).isoformat()}"
            return (
                f"TALLY_EVENTS_RETENTION_MONTHS={policy.months} is shorter than what the live resources "
                f"of cloud {cloud!r} need: its sync completed {seen}, before the boundary "
                f"{boundary.date().isoformat()}, so its next run may book corrections dated in the "
                "months to retire (keep more months, or let a sync complete first)"
            )
    if policy.drop:
        unarchived = sorted(await detached_months(tx) - await retired(tx))
        if unarchived:
            return (
                f"TALLY_EVENTS_RETENTION_DROP would drop {partition_name(unarchived[0])}, whose usage was "
                "never archived (it was detached outside Tally's retention): attach it back so that "
                "retention archives it, or drop the table by hand"
            )
    return None


def _quantity_text(value: int | Decimal) -> str:
    return str(value)


def _quantity(text: str) -> int | Decimal:
    return Decimal(text) if any(c in text for c in ".eE") else int(text)


def _archive_rows(
    month: datetime, key: ResourceKey, platform: str, lines: dict[tuple[str, str], UsageLine]
) -> list[tuple[Any, ...]]:
    return [
        (
            month.date(),
            key.cloud,
            platform,
            key.resource_type,
            key.resource_id,
            project_id,
            state,
            line.presence_us,
            {m: _quantity_text(v) for m, v in line.quantities.items()},
            line.creates,
            line.deletes,
            line.received_at,
        )
        for (project_id, state), line in sorted(lines.items())
    ]


_EVENT_COLUMNS = (
    "t.event_id, t.timestamp, t.received_at, t.event_type, t.platform, t.cloud, t.resource_type, "
    "t.resource_id, t.project_id, t.source, t.payload"
)


async def _histories(
    store: PostgresDialect, tx: Tx, keys: Sequence[ResourceKey], bound: str, at: datetime
) -> dict[ResourceKey, list[StoredEvent]]:
    """The events of ``keys`` dated ``bound`` (``<=`` or ``>``) ``at``. The bound lets PostgreSQL
    prune: reading up to the boundary touches the month retired, the default partition and the month
    after, rather than probing every month's index for every key."""
    out: dict[ResourceKey, list[StoredEvent]] = {}
    if not keys:
        return out
    values = ", ".join("(?, ?, ?)" for _ in keys)
    recs = await tx.fetchall(
        f"SELECT {_EVENT_COLUMNS} FROM (VALUES {values}) AS k JOIN {PARENT} AS t ON t.cloud = k.column1 "
        f"AND t.resource_type = k.column2 AND t.resource_id = k.column3 WHERE t.timestamp {bound} ?",
        [*(part for key in keys for part in (key.cloud, key.resource_type, key.resource_id)), store.ts(at)],
    )
    for rec in recs:
        stored = store.stored(rec)
        out.setdefault(stored.event.key, []).append(stored)
    return out


async def _retire_keys(
    store: PostgresDialect, tx: Tx, month: datetime, keys: Sequence[ResourceKey]
) -> tuple[int, int]:
    """Archive the month's usage of ``keys`` and store their snapshots; (snapshots, usage lines)."""
    end = add_months(month, 1)
    window = UsageWindow(month, end, end)
    histories = await _histories(store, tx, keys, "<=", end)
    snapshots: list[StoredEvent] = []
    archive: list[tuple[Any, ...]] = []
    ended: list[ResourceKey] = []  # no snapshot from what was read: ended, unless events follow
    for key in keys:
        history = histories.get(key, [])
        if not history:
            continue
        archive.extend(_archive_rows(month, key, history[-1].event.platform, resource_usage(history, window)))
        snapshot = snapshot_for(history, end)
        if snapshot is not None:
            snapshots.append(snapshot)
        elif any(e.event.timestamp < end for e in history):
            ended.append(key)
    # Only a key that ended before the boundary needs to know whether anything comes after it.
    for key, later in (await _histories(store, tx, ended, ">", end)).items():
        snapshot = snapshot_for([*histories[key], *later], end)
        if snapshot is not None:
            snapshots.append(snapshot)
    if snapshots:
        marks = ", ".join("?" for _ in range(11))
        await tx.executemany(
            f"INSERT INTO {PARENT} (event_id, timestamp, received_at, event_type, platform, cloud, "
            "resource_type, resource_id, project_id, source, payload) "
            f"VALUES ({marks}) ON CONFLICT DO NOTHING",
            [store.event_params(s.event, s.received_at) for s in snapshots],
        )
    if archive:
        await tx.executemany(
            "INSERT INTO usage_archive (month, cloud, platform, resource_type, resource_id, project_id, "
            "state, presence_us, quantities, creates, deletes, received_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [(*row[:8], store.js(row[8]), *row[9:]) for row in archive],
        )
    return len(snapshots), len(archive)


async def retire_month(store: PostgresDialect, tx: Tx, month: datetime, *, drop: bool) -> RetiredMonth:
    """Retire one attached month (see the module), in the caller's transaction under its lock."""
    name = partition_name(month)
    end = add_months(month, 1)
    counted = await tx.fetchall(f"SELECT count(*) FROM {name}")
    recs = await tx.fetchall(
        f"SELECT cloud, resource_type, resource_id FROM {name} UNION "
        f"SELECT cloud, resource_type, resource_id FROM {DEFAULT_PARTITION} WHERE timestamp < ? "
        "ORDER BY 1, 2, 3",
        [store.ts(end)],
    )
    keys = [ResourceKey(*r) for r in recs]
    if end not in await attached_months(tx):
        await make_month(tx, end)  # where the snapshots go: the default partition is for strays
    snapshots = lines = 0
    for start in range(0, len(keys), KEY_CHUNK):
        made, archived = await _retire_keys(store, tx, month, keys[start : start + KEY_CHUNK])
        snapshots += made
        lines += archived
    await tx.execute(f"ALTER TABLE {PARENT} DETACH PARTITION {name}")
    if drop:
        await tx.execute(f"DROP TABLE {name}")
    else:
        # Detaching took the parent's trigger off the table; what is kept stays append-only.
        await tx.execute(
            f"CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON {name} "
            "FOR EACH ROW EXECUTE FUNCTION tally_events_append_only()"
        )
    events = int(counted[0][0])
    await tx.execute(
        "INSERT INTO retired_months (month, events, snapshots, usage_lines, dropped) VALUES (?, ?, ?, ?, ?)",
        [month.date(), events, snapshots, lines, drop],
    )
    log.info(
        "events month retired month=%s events=%d snapshots=%d usage_lines=%d dropped=%s",
        _month_text(month),
        events,
        snapshots,
        lines,
        drop,
    )
    return RetiredMonth(month, events, snapshots, lines, drop)


ArchivedLines = dict[ResourceKey, dict[tuple[str, str], UsageLine]]


async def archived_usage(tx: Tx, month: datetime, *, cloud: str | None = None) -> ArchivedLines:
    """The archived usage of a retired month, per resource and (project, state), as it was exported."""
    where = "month = ?"
    params: list[Any] = [date(month.year, month.month, 1)]
    if cloud is not None:
        where += " AND cloud = ?"
        params.append(cloud)
    recs = await tx.fetchall(
        "SELECT cloud, resource_type, resource_id, project_id, state, presence_us, quantities, creates, "
        f"deletes, received_at FROM usage_archive WHERE {where} "
        "ORDER BY cloud, resource_type, resource_id, project_id, state",
        params,
    )
    out: ArchivedLines = {}
    for c, rtype, rid, project_id, state, presence, quantities, creates, deletes, received in recs:
        line = UsageLine(
            presence_us=int(presence),
            quantities={m: _quantity(v) for m, v in quantities.items()},
            creates=int(creates),
            deletes=int(deletes),
            received_at=None if received is None else received.astimezone(UTC),
        )
        out.setdefault(ResourceKey(c, rtype, rid), {})[(project_id, state)] = line
    return out
