"""The inventory at a past instant (``stats/resources?at=``): each resource's history folded up to it.

The projection holds only the present, so a past instant is answered from the
events: the keys whose history starts by ``at`` are read a page at a time,
each history is replayed up to ``at`` by the same fold that maintains the
projection (``tally.core.project_at``), and the rows are filtered and counted
as ``Store.resource_stats`` counts the present. Memory stays bounded by one
page of histories; the cost grows with the events of the matching keys.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Protocol

from tally.core import ResourceRow, project_at
from tally.store import EventsRole, ProjectionRole, ResourceFilter

KEYS_PER_READ = 500


class InventoryStore(ProjectionRole, EventsRole, Protocol):
    """What an inventory at an instant reads: the projection's keys, then their histories."""


def matches(row: ResourceRow, filters: ResourceFilter) -> bool:
    """Whether a folded row passes the filters, exactly as the projection's rows are filtered."""
    wanted = (
        (filters.cloud, row.key.cloud),
        (filters.platform, row.platform),
        (filters.project_id, row.project_id),
        (filters.resource_type, row.key.resource_type),
        (filters.state, row.state),
    )
    if any(want is not None and want != have for want, have in wanted):
        return False
    if filters.status == "active":
        return row.deleted_at is None
    if filters.status == "deleted":
        return row.deleted_at is not None
    return True


def _group_value(row: ResourceRow, column: str) -> str:
    if column in ("cloud", "resource_type"):
        return str(getattr(row.key, column))
    return str(getattr(row, column))


def count_rows(
    rows: Iterable[ResourceRow], group_by: Sequence[str], filters: ResourceFilter
) -> list[dict[str, Any]]:
    """Rows passing ``filters`` counted per group: ``Store.resource_stats``' answer over these rows."""
    counts = Counter(tuple(_group_value(r, c) for c in group_by) for r in rows if matches(r, filters))
    return [{**dict(zip(group_by, values, strict=True)), "count": n} for values, n in sorted(counts.items())]


async def rows_at(store: InventoryStore, at: datetime, filters: ResourceFilter) -> list[ResourceRow]:
    """Every resource of ``filters``' cloud and type as it stood at ``at`` (the other filters are not
    applied: they hold for the row at ``at``, not for the row now)."""
    keys_of = ResourceFilter(cloud=filters.cloud, resource_type=filters.resource_type, status="all")
    out: list[ResourceRow] = []
    after = None
    while True:
        page = await store.list_resources(keys_of, limit=KEYS_PER_READ, after=after)
        keys = [r.key for r in page.items if r.first_event_at <= at]
        histories = await store.histories(keys) if keys else {}
        for key in keys:
            row = project_at(histories.get(key, ()), at)
            if row is not None:
                out.append(row)
        if page.next_key is None:
            return out
        after = page.next_key


async def resource_stats_at(
    store: InventoryStore, group_by: Sequence[str], at: datetime, filters: ResourceFilter
) -> list[dict[str, Any]]:
    """``Store.resource_stats`` as it would have answered at ``at``."""
    return count_rows(await rows_at(store, at, filters), group_by, filters)
