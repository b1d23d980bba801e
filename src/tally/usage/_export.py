"""The usage export over a store: pages of per-resource lines, or the lines of groups.

A page the API answers as JSON (``resource_page``) reads ``Store.usage_histories`` and folds each
resource with ``tally.core.resource_usage``. A whole export (``resource_pages``, ``group_rows``: the
CSV, ``tally usage``, the project summary, the simulator's check) reads ``Store.open_usage_stream``
and folds its facts with ``tally.core.fact_usage`` / ``add_fact_group_usage``, which answer the same
numbers (tests/core/test_usage_facts.py) at a fraction of the cost. Memory holds one chunk of
histories (plus, for groups, one line per group) whatever the size of the cloud.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import TypeVar

import anyio
import anyio.to_thread

from tally.core import (
    GroupKey,
    ResourceKey,
    StoredEvent,
    UsageFact,
    UsageLine,
    UsageWindow,
    add_fact_group_usage,
    fact_usage,
    resource_usage,
)
from tally.store import EventsRole, ProjectionRole, ResourceFilter, UsageScope

MAX_WINDOW = timedelta(days=397)  # a year and a month: last year's invoices, with a margin
RESOURCE_COLUMNS = ("cloud", "resource_type", "resource_id", "project_id")

Progress = Callable[[int], None]  # called with the number of resources just read


class WindowError(ValueError):
    """A window that cannot be answered; ``parameter`` names the bound at fault (``to``)."""

    def __init__(self, parameter: str, message: str, *, too_long: bool = False) -> None:
        super().__init__(message)
        self.parameter = parameter
        self.too_long = too_long


def check_window(start: datetime, end: datetime) -> None:
    if end <= start:
        raise WindowError("to", "must be later than from")
    if end - start > MAX_WINDOW:
        raise WindowError("to", f"the window may span at most {MAX_WINDOW.days} days", too_long=True)


@dataclass(frozen=True, slots=True)
class UsageQuery:
    window: UsageWindow
    cloud: str | None = None
    platform: str | None = None
    project_id: str | None = None
    resource_type: str | None = None
    group_by: tuple[str, ...] = ()

    @property
    def scope(self) -> UsageScope:
        w = self.window
        return UsageScope(
            start=w.start,
            end=w.end,
            as_of=w.as_of,
            cloud=self.cloud,
            platform=self.platform,
            project_id=self.project_id,
            resource_type=self.resource_type,
        )

    @property
    def columns(self) -> tuple[str, ...]:
        """The members that name a line (besides its state); a group line always names its type, since
        quantities of two types (a volume's and an image's GB) must never be summed."""
        if not self.group_by:
            return RESOURCE_COLUMNS
        return tuple(dict.fromkeys(["resource_type", *self.group_by]))


@dataclass(frozen=True, slots=True)
class UsageRow:
    """One line of the export: the values of ``UsageQuery.columns``, the state, and the usage."""

    values: tuple[str | None, ...]
    state: str
    line: UsageLine


def _resource_rows(key: ResourceKey, lines: dict[tuple[str, str], UsageLine]) -> list[UsageRow]:
    if len(lines) == 1:
        [((project_id, state), line)] = lines.items()
        return [UsageRow((key.cloud, key.resource_type, key.resource_id, project_id), state, line)]
    return [
        UsageRow((key.cloud, key.resource_type, key.resource_id, project_id), state, line)
        for (project_id, state), line in sorted(lines.items())
    ]


def _page_rows(items: Sequence[tuple[ResourceKey, list[StoredEvent]]], query: UsageQuery) -> list[UsageRow]:
    rows: list[UsageRow] = []
    for key, events in items:
        rows += _resource_rows(key, resource_usage(events, query.window, project_id=query.project_id))
    return rows


async def resource_page(
    store: EventsRole, query: UsageQuery, *, limit: int, after: ResourceKey | None = None
) -> tuple[list[UsageRow], ResourceKey | None, int]:
    """The lines of up to ``limit`` resources after ``after``: (rows, next key or None, resources read)."""
    page = await store.usage_histories(query.scope, limit=limit, after=after)
    return _page_rows(page.items, query), page.next_key, len(page.items)


FactHistories = list[tuple[ResourceKey, list[UsageFact]]]
_T = TypeVar("_T")


async def _folded(
    batches: AsyncIterator[FactHistories], fold: Callable[[FactHistories], _T]
) -> AsyncIterator[tuple[_T, int]]:
    """``fold`` of each batch, with the number of resources in it.

    The next batch is read while this one is folded (in a worker thread, so that the event loop
    sends the fetch and takes its rows meanwhile): the database's time and the fold's overlap."""
    batch = await anext(batches, None)
    while batch is not None:
        ahead: list[FactHistories | None] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read_into, ahead, batches)
            done = await anyio.to_thread.run_sync(fold, batch)
        yield done, len(batch)
        batch = ahead[0]


async def _read_into(into: list[FactHistories | None], batches: AsyncIterator[FactHistories]) -> None:
    into.append(await anext(batches, None))


def _fact_rows(query: UsageQuery, batch: FactHistories) -> list[UsageRow]:
    window, project_id = query.window, query.project_id
    rows: list[UsageRow] = []
    for key, facts in batch:
        lines = fact_usage(facts, window, project_id=project_id)
        if lines:
            rows += _resource_rows(key, lines)
    return rows


async def folded_batches(
    store: EventsRole,
    query: UsageQuery,
    fold: Callable[[FactHistories], _T],
    progress: Progress | None = None,
) -> AsyncGenerator[_T, None]:
    """``fold`` of every batch of the query's facts, in key order (the rated export's reader too)."""
    async with store.open_usage_stream(query.scope) as batches:
        async for done, count in _folded(batches, fold):
            if progress is not None:
                progress(count)
            yield done


async def resource_pages(
    store: EventsRole, query: UsageQuery, *, progress: Progress | None = None
) -> AsyncGenerator[list[UsageRow], None]:
    """Every per-resource line of the query, a chunk of resources at a time, in key order."""
    async for rows in folded_batches(store, query, partial(_fact_rows, query), progress):
        if rows:
            yield rows


def _group_order(item: tuple[GroupKey, UsageLine]) -> tuple[tuple[str, ...], str]:
    (values, state), _ = item
    return tuple("" if v is None else v for v in values), state


def _add_groups(query: UsageQuery, totals: dict[GroupKey, UsageLine], batch: FactHistories) -> None:
    columns, window, project_id = query.columns, query.window, query.project_id
    for key, facts in batch:
        add_fact_group_usage(
            totals, columns, key.cloud, key.resource_type, facts, window, project_id=project_id
        )


async def group_rows(
    store: EventsRole, query: UsageQuery, *, progress: Progress | None = None
) -> list[UsageRow]:
    """The lines of every group of ``query.columns`` and state, ordered by their values."""
    totals: dict[GroupKey, UsageLine] = {}
    async with store.open_usage_stream(query.scope) as batches:
        async for _, count in _folded(batches, partial(_add_groups, query, totals)):
            if progress is not None:
                progress(count)
    return [
        UsageRow(values, state, line) for (values, state), line in sorted(totals.items(), key=_group_order)
    ]


async def resources_in_scope(store: ProjectionRole, query: UsageQuery) -> int:
    """How many projection rows the query may read: the total of a progress bar."""
    filters = ResourceFilter(
        cloud=query.cloud,
        platform=query.platform,
        project_id=query.project_id,
        resource_type=query.resource_type,
        status="all",
    )
    counts = await store.resource_stats(["cloud"], filters=filters)
    return sum(int(c["count"]) for c in counts)


def rows_after(rows: Sequence[UsageRow], after: tuple[str, ...] | None) -> list[UsageRow]:
    """Group lines strictly after a cursor's (values..., state), in their order."""
    if after is None:
        return list(rows)
    return [r for r in rows if (*("" if v is None else v for v in r.values), r.state) > after]
