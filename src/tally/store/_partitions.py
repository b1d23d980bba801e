"""The monthly partitions of ``events`` on PostgreSQL: which exist, the coming months made ahead, and a
month split out of the default partition.

Migration 0010 makes ``events`` RANGE-partitioned on ``timestamp``, one partition per UTC month
(``events_pYYYYMM``) and ``events_default`` for any instant no partition covers. ``ensure_partitions``
keeps the current month and the next ``ahead`` ones in place, and makes the month of any row the
default partition holds from 2000 up to the last month ahead (a daemon down for months, events dated
in a month that had no partition yet); the daemon runs it every ``TALLY_EVENTS_MAINTENANCE_INTERVAL_S``
and ``tally migrate up`` after the migrations. PostgreSQL refuses to create a
partition whose range the default partition holds rows of, so such a month is made by detaching the
default partition, creating the month, moving the rows over and attaching the default again, in one
transaction (the detach also lifts the append-only trigger from the detached table for that move; the
attach gives it back).

Replicas run this at once: the transaction first takes a transaction advisory lock with
``pg_try_advisory_xact_lock``, and a replica that finds it held does nothing this round (the holder
makes the same months). A month retention took out (``retired_months``) is never made again.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ._seam import Tx

log = logging.getLogger(__name__)

PARENT = "events"
DEFAULT_PARTITION = "events_default"
# The advisory lock of the events maintenance (partitions and retention); the migrations use 0x7A11_0001.
MAINTENANCE_LOCK = 0x7A11_0002
FIRST_MONTH = datetime(2000, 1, 1, tzinfo=UTC)  # the oldest month a partition is made for
_NAME = re.compile(r"^events_p(\d{4})(\d{2})$")


def month_start(at: datetime) -> datetime:
    """The first instant of ``at``'s UTC month."""
    utc = at.astimezone(UTC)
    return datetime(utc.year, utc.month, 1, tzinfo=UTC)


def add_months(month: datetime, count: int) -> datetime:
    """The first instant of the month ``count`` months after ``month`` (which starts a month)."""
    index = month.year * 12 + month.month - 1 + count
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)


def partition_name(month: datetime) -> str:
    return f"events_p{month.year:04d}{month.month:02d}"


def month_of(name: str) -> datetime | None:
    """The month a partition's name covers; None for a name that is not a month partition's."""
    match = _NAME.match(name)
    if match is None:
        return None
    year, month = int(match.group(1)), int(match.group(2))
    return datetime(year, month, 1, tzinfo=UTC) if 1 <= month <= 12 else None


def months_to_make(now: datetime, ahead: int) -> list[datetime]:
    """The current month and the ``ahead`` after it: the partitions kept in place ahead of the data."""
    first = month_start(now)
    return [add_months(first, n) for n in range(ahead + 1)]


def _literal(at: datetime) -> str:
    # A bound is spliced into DDL, which takes no parameters; it is always an instant made here.
    return f"'{at.astimezone(UTC).isoformat()}'"


@dataclass(frozen=True, slots=True)
class PartitionStats:
    """What the metrics show: month partitions attached to ``events``, month tables detached from it
    (retention's, kept as tables), and the rows of the default partition."""

    attached: int
    detached: int
    default_rows: int


@dataclass(frozen=True, slots=True)
class EnsureOutcome:
    """One round of ``ensure_partitions``: the months made, the rows moved out of the default
    partition, or ``skipped`` when another replica held the maintenance lock."""

    created: tuple[datetime, ...] = ()
    moved_rows: int = 0
    skipped: bool = False


async def is_partitioned(tx: Tx) -> bool:
    """True once migration 0010 made ``events`` a partitioned table (in the session's schema)."""
    recs = await tx.fetchall("SELECT relkind::text FROM pg_class WHERE oid = to_regclass(?)", [PARENT])
    return bool(recs) and recs[0][0] == "p"


# The partitions of ``events`` (none when it is one table), its one parameter ``PARENT``.
ATTACHED_SQL = (
    "SELECT c.relname FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid "
    "WHERE i.inhparent = to_regclass(?)"
)


def months_named(recs: Iterable[Sequence[Any]]) -> set[datetime]:
    """The months of the month partitions among the tables named by ``ATTACHED_SQL``'s rows."""
    return {month for (name, *_) in recs if (month := month_of(name)) is not None}


async def attached_months(tx: Tx) -> set[datetime]:
    return months_named(await tx.fetchall(ATTACHED_SQL, [PARENT]))


async def detached_months(tx: Tx) -> set[datetime]:
    """Month tables of the events' schema that are not partitions of it (left by retention)."""
    recs = await tx.fetchall(
        "SELECT c.relname FROM pg_class AS c "
        "WHERE c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = to_regclass(?)) "
        "AND c.relkind = 'r' AND NOT c.relispartition AND c.relname LIKE 'events\\_p%'",
        [PARENT],
    )
    return {month for (name,) in recs if (month := month_of(name)) is not None}


async def retired(tx: Tx) -> set[datetime]:
    recs = await tx.fetchall("SELECT month FROM retired_months")
    return {datetime(d.year, d.month, 1, tzinfo=UTC) for (d,) in recs}


async def take_maintenance_lock(tx: Tx) -> bool:
    """The events maintenance's lock for this transaction; False when another replica holds it."""
    recs = await tx.fetchall("SELECT pg_try_advisory_xact_lock(?)", [MAINTENANCE_LOCK])
    return bool(recs[0][0])


async def make_month(tx: Tx, month: datetime) -> int:
    """Create ``month``'s partition; the rows of its range the default partition held, moved into it."""
    name, lo, hi = partition_name(month), _literal(month), _literal(add_months(month, 1))
    in_range = f"timestamp >= {lo} AND timestamp < {hi}"
    held = await tx.fetchall(f"SELECT count(*) FROM {DEFAULT_PARTITION} WHERE {in_range}")
    count = int(held[0][0])
    if count == 0:
        await tx.execute(f"CREATE TABLE {name} PARTITION OF {PARENT} FOR VALUES FROM ({lo}) TO ({hi})")
        return 0
    await tx.execute(f"ALTER TABLE {PARENT} DETACH PARTITION {DEFAULT_PARTITION}")
    await tx.execute(f"CREATE TABLE {name} PARTITION OF {PARENT} FOR VALUES FROM ({lo}) TO ({hi})")
    await tx.execute(f"INSERT INTO {PARENT} SELECT * FROM {DEFAULT_PARTITION} WHERE {in_range}")
    await tx.execute(f"DELETE FROM {DEFAULT_PARTITION} WHERE {in_range}")
    await tx.execute(f"ALTER TABLE {PARENT} ATTACH PARTITION {DEFAULT_PARTITION} DEFAULT")
    return count


async def ensure_partitions(tx: Tx, now: datetime, ahead: int) -> EnsureOutcome:
    """The partitions of ``months_to_make`` that are missing, created (under the maintenance lock,
    which the caller took)."""
    present = await attached_months(tx)
    months = set(months_to_make(now, ahead))
    # And every month the default partition holds rows of, from 2000 up to the last month made ahead:
    # a daemon that was down for months, or events dated in a month that had no partition yet.
    # Before 2000 and beyond that, an instant is taken for a clock's error and stays in the default.
    last = add_months(month_start(now), ahead + 1)
    held = await tx.fetchall(
        f"SELECT DISTINCT date_trunc('month', timestamp, 'UTC') FROM {DEFAULT_PARTITION} "
        f"WHERE timestamp >= {_literal(FIRST_MONTH)} AND timestamp < {_literal(last)}"
    )
    months.update(month_start(m) for (m,) in held)
    gone = await retired(tx) | await detached_months(tx)
    created: list[datetime] = []
    moved = 0
    for month in sorted(set(months)):
        if month in present or month in gone:
            continue
        rows = await make_month(tx, month)
        log.info("events partition created name=%s moved_from_default=%d", partition_name(month), rows)
        created.append(month)
        moved += rows
    return EnsureOutcome(tuple(created), moved)


async def partition_stats(tx: Tx) -> PartitionStats:
    attached = await attached_months(tx)
    detached = await detached_months(tx)
    rows = await tx.fetchall(f"SELECT count(*) FROM {DEFAULT_PARTITION}")
    return PartitionStats(len(attached), len(detached), int(rows[0][0]))
