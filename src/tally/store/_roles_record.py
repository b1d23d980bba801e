"""The store's roles over the record itself: its schema, the ingest of events, the events as stored,
the projection of current resources and the API's listing pages of both. ``Store`` is all of the
roles (``_interface``); a consumer that needs one role takes that role.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol

from tally.core import Event, ResourceKey, ResourceRow, StoredEvent, UsageFact

from ._records import (
    AuditEntry,
    BatchOutcome,
    BatchWriter,
    Bucket,
    DeadLetter,
    EventFilter,
    EventKey,
    Page,
    ResourceFilter,
    SchemaStatus,
    SyncRow,
    UsageScope,
)


class SchemaRole(Protocol):
    """Migrations, the schema's state and a write probe."""

    # -- schema --------------------------------------------------------------------------------------
    async def migrate_up(self) -> list[int]:
        """Apply every pending migration in order; return the versions applied (empty when current)."""
        ...

    async def migrate_down(self, target: int) -> list[int]:
        """Roll back every applied migration above ``target`` (newest first); return the versions undone."""
        ...

    async def schema_status(self) -> SchemaStatus:
        """Applied version vs latest known; raises when the database cannot be reached."""
        ...

    async def write_check(self) -> None:
        """A write that changes nothing, committed: raises ``StoreUnavailable`` naming why when the
        store cannot write now (PostgreSQL read-only; SQLite's file on a full disk or read-only)."""
        ...


class IngestRole(Protocol):
    """Storing events, deduplicated in the transaction that stores them."""

    # -- ingest ---------------------------------------------------------------------------------------
    async def write_batch(
        self,
        events: Sequence[Event],
        *,
        dead_letters: Sequence[DeadLetter] = (),
        audits: Sequence[AuditEntry] = (),
        received_at: datetime | None = None,
    ) -> BatchOutcome:
        """In ONE transaction: insert ``events`` (ON CONFLICT (event_id, timestamp) DO NOTHING; a conflict,
        or a repeat inside the batch, is a duplicate), fold the inserted ones into current_resources per
        key in key order (replaying a key's whole history when a new event sorts before the row's newest),
        and write the dead letters and audit rows. All events get ``received_at`` (default: now)."""
        ...

    def open_batch(
        self, keys: Iterable[ResourceKey], *, received_at: datetime | None = None
    ) -> AbstractAsyncContextManager[BatchWriter]:
        """``write_batch`` in steps, for a caller that validates as it goes: the transaction begins
        now, told the resources the raw items name, so that a backend can lock and read their rows,
        and insert events, while the caller validates the rest. Keys it was not told of are locked
        when their events come. Nothing may be read through the store inside the block: the batch
        may hold the store's only connection."""
        ...


class EventsRole(Protocol):
    """The events as stored: listings, one resource's history, the histories the usage folds."""

    # -- events ---------------------------------------------------------------------------------------
    async def list_events(
        self, filters: EventFilter, *, limit: int = 100, after: EventKey | None = None
    ) -> Page[StoredEvent, EventKey]:
        """Events matching ``filters`` ordered by (timestamp, event_id), strictly after ``after``."""
        ...

    async def resource_history(self, key: ResourceKey, *, limit: int | None = None) -> list[StoredEvent]:
        """A resource's events in fold order (timestamp, received_at, event_id); at most ``limit`` of them
        (the API asks for 10,001 to tell a history over 10,000 apart)."""
        ...

    async def lifecycle_events(self, key: ResourceKey) -> list[StoredEvent]:
        """Every event of one resource in fold order (what ``tally.core.lifecycle`` folds)."""
        ...

    async def histories(self, keys: Sequence[ResourceKey]) -> dict[ResourceKey, list[StoredEvent]]:
        """Every event of each key that has any, in fold order: ``lifecycle_events`` of many keys in a
        few reads."""
        ...

    async def event_stats(
        self,
        group_by: Sequence[str],
        *,
        start: datetime,
        end: datetime,
        interval: Bucket,
        filters: EventFilter = EventFilter(),
    ) -> list[dict[str, Any]]:
        """Event counts per time bucket and group in ``[start, end)``. Each dict: ``bucket`` (datetime,
        the bucket start in UTC), one entry per member of ``group_by`` (subset of EVENT_GROUPS), ``count``.
        Ordered by bucket then group values."""
        ...

    async def usage_histories(
        self, scope: UsageScope, *, limit: int = 500, after: ResourceKey | None = None
    ) -> Page[tuple[ResourceKey, list[StoredEvent]], ResourceKey]:
        """Up to ``limit`` resources of ``scope`` after ``after`` in key order, each with its events in
        fold order, payloads cut to ``state`` and ``size`` (what the usage fold reads)."""
        ...

    def open_usage_stream(
        self, scope: UsageScope, *, rows: int = ...
    ) -> AbstractAsyncContextManager[AsyncIterator[list[tuple[ResourceKey, list[UsageFact]]]]]:
        """Every resource of ``scope`` in key order with its facts (``tally.core.UsageFact``: the
        ``usage_histories`` events as the fast fold reads them), in lists of whole histories, read in
        chunks of about ``rows`` rows while the body of the ``async with`` consumes them."""
        ...


class ProjectionRole(Protocol):
    """The projection of current resources, one row per resource, and what a sync reads of it."""

    # -- resources ------------------------------------------------------------------------------------
    async def get_resource(self, key: ResourceKey) -> ResourceRow | None: ...

    async def list_resources(
        self, filters: ResourceFilter, *, limit: int = 100, after: ResourceKey | None = None
    ) -> Page[ResourceRow, ResourceKey]:
        """Projection rows matching ``filters`` ordered by key (cloud, resource_type, resource_id)."""
        ...

    async def resource_stats(
        self, group_by: Sequence[str], *, filters: ResourceFilter = ResourceFilter()
    ) -> list[dict[str, Any]]:
        """Row counts grouped by ``group_by`` (subset of RESOURCE_GROUPS); each dict has the group members
        and ``count``; ordered by the group values."""
        ...

    async def resources_of_cloud(self, cloud: str) -> list[ResourceRow]:
        """Every projection row of a cloud, deleted ones too, ordered by key."""
        ...

    async def sync_rows(self, cloud: str, resource_type: str) -> list[SyncRow]:
        """The rows of one type of a cloud as a sync's diff reads them, deleted ones too (without their
        size), ordered by resource_id; equal sizes share one mapping, to be read only."""
        ...

    async def current_resource_counts(self) -> list[tuple[str, str, str, str, int]]:
        """(platform, cloud, resource_type, state, count) of all rows: feeds the tally_current_resources
        gauge."""
        ...

    async def rebuild_projection(self, *, cloud: str | None = None, resource_type: str | None = None) -> int:
        """Replay current_resources from the events of the matching keys, 100 keys per transaction;
        return the number of keys rebuilt."""
        ...


class PagesRole(Protocol):
    """The listing pages the Reporting API answers, each item already its JSON object: the pages of
    ``EventsRole.list_events`` and ``ProjectionRole.list_resources`` without a record per row."""

    # -- pages ----------------------------------------------------------------------------------------
    async def list_events_json(
        self, filters: EventFilter, *, limit: int = 100, after: EventKey | None = None
    ) -> Page[dict[str, Any], EventKey]:
        """The page of ``EventsRole.list_events``, each event as its JSON object (``StoredEvent.to_wire``)."""
        ...

    async def list_resources_json(
        self, filters: ResourceFilter, *, limit: int = 100, after: ResourceKey | None = None
    ) -> Page[dict[str, Any], ResourceKey]:
        """The page of ``ProjectionRole.list_resources``, each row as its JSON object
        (``ResourceRow.to_wire``)."""
        ...
