"""The Store interface: everything Tally reads from and writes to its database, and the types it speaks.

Two backends implement it (SQLite for the embedded default, PostgreSQL for
production) and one contract test suite holds both to it. Callers code against
``Store`` only; ``open_store(url)`` picks the backend from the URL scheme.

Identifiers of projects, relations, tokens, credentials, rejected events and
sync runs are UUID strings. Every instant is an aware UTC ``datetime``.
Pagination is keyset: a read returns a ``Page`` whose ``next_key`` is the sort
key of its last item when more items follow (``None`` otherwise); the caller
passes it back as ``after`` (the HTTP layer turns it into an opaque cursor).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, NamedTuple, Protocol, TypeVar

from tally.core import Event, ResourceKey, ResourceRow, StoredEvent

from ._credential_types import ApiToken as ApiToken
from ._credential_types import CredentialStatus as CredentialStatus
from ._credential_types import IngestCredential as IngestCredential
from ._credential_types import TokenRole as TokenRole

T = TypeVar("T")
K = TypeVar("K")

ResourceStatus = Literal["active", "deleted", "all"]
Bucket = Literal["1h", "1d"]
SyncStatus = Literal["running", "completed", "failed"]

RESOURCE_GROUPS = frozenset({"cloud", "resource_type", "state", "platform", "project_id"})
EVENT_GROUPS = frozenset({"cloud", "event_type", "source", "platform", "resource_type"})


class StoreError(Exception):
    """Base of the store's errors a caller can act on."""


class UnsupportedStoreUrl(StoreError):
    """The URL names no backend we have (only ``sqlite:///path`` and ``postgresql://...``)."""


class SyncLockHeld(StoreError):
    """Another holder (any process, any replica) runs a sync of this cloud right now."""

    def __init__(self, cloud: str) -> None:
        super().__init__(f"a sync of cloud {cloud!r} is already running")
        self.cloud = cloud


class Conflict(StoreError):
    """A write that would break a uniqueness rule (project (cloud, external_id), active relation triple)."""


class RuleViolation(StoreError):
    """A write that breaks a row rule (virtual-platform rule of projects, relation to itself, unknown FK)."""


class MigrationError(StoreError):
    """A migration step failed or the requested target does not exist."""


@dataclass(frozen=True, slots=True)
class SchemaStatus:
    """Applied migration version vs the newest this build knows; ``behind`` makes /readyz answer 503."""

    current: int
    latest: int

    @property
    def behind(self) -> bool:
        return self.current < self.latest

    @property
    def ahead(self) -> bool:
        """Migrated by a newer build: versions this one has no migration for, so no idea of the tables."""
        return self.current > self.latest


@dataclass(frozen=True, slots=True)
class SizeName:
    """One size-name row: in ``cloud``, a ``resource_type`` size with ``member`` = ``value`` is ``name``."""

    cloud: str
    resource_type: str
    member: str
    value: str
    name: str


class SyncRow(NamedTuple):
    """The slice of a projection row a sync's diff reads (``Store.sync_rows``): no payload, no bookkeeping.

    Invariant: ``size`` is None exactly when the row is deleted (a deleted row's size is never compared).
    A tuple rather than a dataclass: a large cloud's sync holds hundreds of thousands of them.
    """

    resource_type: str
    resource_id: str
    project_id: str
    state: str
    size: Mapping[str, Any] | None
    last_event_at: datetime
    is_live: bool
    # The instant of the row's create (None when its history holds no create event), and of its oldest event.
    created_at: datetime | None = None
    first_event_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class SyncReceipts:
    """When the store first took an event of a resource, and which sync runs booked one for it
    (``Store.sync_receipts``): what a sync needs to tell whether an earlier run held its row."""

    first_received_at: datetime
    sync_run_ids: frozenset[str]


@dataclass(frozen=True, slots=True)
class ResourceType:
    platform: str
    resource_type: str
    size_schema: Mapping[str, Any]
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Project:
    id: str
    platform: str
    cloud: str
    external_id: str
    name: str | None
    metadata: Mapping[str, Any]
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Relation:
    """A directed relation ``source -> target``; ``valid_to`` None = still active. Never hard-deleted."""

    id: str
    source_id: str
    target_id: str
    relation_type: str
    metadata: Mapping[str, Any]
    valid_from: datetime
    valid_to: datetime | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class RejectedEvent:
    id: str
    received_at: datetime
    reason: str
    raw: Any


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """An audit row to write; the store adds the id and ``at``."""

    actor: str
    action: str
    object_type: str
    object_id: str
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AuditRecord:
    id: int
    at: datetime
    actor: str
    action: str
    object_type: str
    object_id: str
    details: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A refused item to keep in rejected_events (``raw`` already cut to its stored form)."""

    reason: str
    raw: Any


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    """What ``write_batch`` did: which events were new, which were duplicates, which keys were replayed."""

    inserted: tuple[Event, ...]
    duplicates: tuple[Event, ...]
    replayed: tuple[ResourceKey, ...]


@dataclass(frozen=True, slots=True)
class Page(Generic[T, K]):
    items: list[T]
    next_key: K | None


@dataclass(frozen=True, slots=True)
class EventFilter:
    """Equality filters on events, plus the half-open window ``[start, end)`` on ``timestamp``."""

    cloud: str | None = None
    platform: str | None = None
    project_id: str | None = None
    resource_type: str | None = None
    event_type: str | None = None
    source: str | None = None
    start: datetime | None = None
    end: datetime | None = None


@dataclass(frozen=True, slots=True)
class ResourceFilter:
    """Equality filters on projection rows; ``status`` active = not deleted, deleted = deleted."""

    cloud: str | None = None
    platform: str | None = None
    project_id: str | None = None
    resource_type: str | None = None
    state: str | None = None
    status: ResourceStatus = "active"


@dataclass(frozen=True, slots=True)
class UsageScope:
    """What a usage export reads: the resources matching the filters that may hold usage in
    ``[start, end)``, with their events dated before ``end`` and received before ``as_of``."""

    start: datetime
    end: datetime
    as_of: datetime | None = None
    cloud: str | None = None
    platform: str | None = None
    project_id: str | None = None  # any event of the project: a resource moved away is still read
    resource_type: str | None = None


class BatchWriter(Protocol):
    """A batch being written, opened by ``Store.open_batch``: events are handed over as they pass
    validation, ``finish`` completes the batch, and leaving the block commits it (an error rolls
    everything back)."""

    async def add(self, events: Sequence[Event]) -> None:
        """Events of the batch that passed validation; a backend may start inserting them now."""
        ...

    async def finish(
        self, *, dead_letters: Sequence[DeadLetter] = (), audits: Sequence[AuditEntry] = ()
    ) -> BatchOutcome:
        """What ``Store.write_batch`` does with every event added, in this batch's transaction."""
        ...


# Sort keys of the paginated reads.
EventKey = tuple[datetime, str]  # (timestamp, event_id)
RejectedKey = tuple[datetime, str]  # (received_at, id)


class Store(Protocol):
    """The one storage interface. Every method is a coroutine unless it returns a context manager."""

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

    async def size_names(self, cloud: str) -> list[SizeName]:
        """The size-name rows of one cloud."""
        ...

    async def replace_size_names(self, cloud: str, rows: Sequence[SizeName]) -> None:
        """Replace all size-name rows of ``cloud`` by ``rows`` in one transaction."""
        ...

    # -- resource types -------------------------------------------------------------------------------
    async def get_resource_type(self, platform: str, resource_type: str) -> ResourceType | None: ...

    async def list_resource_types(self) -> list[ResourceType]:
        """All registered types, ordered by (platform, resource_type)."""
        ...

    async def put_resource_type(
        self, platform: str, resource_type: str, size_schema: Mapping[str, Any]
    ) -> ResourceType:
        """Insert or replace the size schema of a pair (the caller has compiled it already)."""
        ...

    # -- events ---------------------------------------------------------------------------------------
    async def list_events(
        self, filters: EventFilter, *, limit: int = 100, after: EventKey | None = None
    ) -> Page[StoredEvent, EventKey]:
        """Events matching ``filters`` ordered by (timestamp, event_id), strictly after ``after``."""
        ...

    async def list_events_json(
        self, filters: EventFilter, *, limit: int = 100, after: EventKey | None = None
    ) -> Page[dict[str, Any], EventKey]:
        """The page of ``list_events``, each event as its JSON object (``StoredEvent.to_wire``)."""
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

    # -- resources ------------------------------------------------------------------------------------
    async def get_resource(self, key: ResourceKey) -> ResourceRow | None: ...

    async def list_resources(
        self, filters: ResourceFilter, *, limit: int = 100, after: ResourceKey | None = None
    ) -> Page[ResourceRow, ResourceKey]:
        """Projection rows matching ``filters`` ordered by key (cloud, resource_type, resource_id)."""
        ...

    async def list_resources_json(
        self, filters: ResourceFilter, *, limit: int = 100, after: ResourceKey | None = None
    ) -> Page[dict[str, Any], ResourceKey]:
        """The page of ``list_resources``, each row as its JSON object (``ResourceRow.to_wire``)."""
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

    # -- projects and relations -----------------------------------------------------------------------
    async def create_project(
        self,
        *,
        platform: str,
        cloud: str,
        external_id: str,
        name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Project:
        """Raises ``Conflict`` on a duplicate (cloud, external_id), ``RuleViolation`` when platform != cloud
        and one of them is meta/partner."""
        ...

    async def get_project(self, project_id: str) -> Project | None: ...

    async def find_project(self, cloud: str, external_id: str) -> Project | None: ...

    async def list_projects(
        self,
        *,
        platform: str | None = None,
        cloud: str | None = None,
        limit: int = 100,
        after: str | None = None,
    ) -> Page[Project, str]:
        """Projects ordered by id."""
        ...

    async def update_project(
        self, project_id: str, *, name: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Project | None:
        """Set the given members (None = unchanged); None when no such project."""
        ...

    async def create_relation(
        self,
        *,
        source_id: str,
        target_id: str,
        relation_type: str,
        metadata: Mapping[str, Any] | None = None,
        valid_from: datetime | None = None,
    ) -> Relation:
        """Raises ``RuleViolation`` (source == target, unknown project) or ``Conflict`` (an active relation
        of the same triple exists). The cycle guard is the caller's (walk ``relations_at``)."""
        ...

    async def get_relation(self, relation_id: str) -> Relation | None: ...

    async def list_relations(self, project_id: str, *, at: datetime | None = None) -> list[Relation]:
        """Relations whose source or target is the project; with ``at``, only those valid at that instant
        (valid_from <= at < valid_to); ordered by (valid_from, id)."""
        ...

    async def relations_at(
        self, at: datetime | None = None, *, relation_type: str | None = None
    ) -> list[Relation]:
        """All relations valid at ``at`` (None: the active ones), for graph walks and the cycle guard."""
        ...

    async def update_relation(
        self,
        relation_id: str,
        *,
        metadata: Mapping[str, Any] | None = None,
        valid_to: datetime | None = None,
    ) -> Relation | None:
        """Set the given members; None when no such relation."""
        ...

    async def end_relation(self, relation_id: str, at: datetime | None = None) -> Relation | None:
        """Close an active relation (valid_to = at or now); the row stays. None when no such relation."""
        ...

    # -- rejected events and audit -------------------------------------------------------------------
    async def list_rejected(
        self,
        *,
        start: datetime | None = None,
        end: datetime | None = None,
        limit: int = 100,
        after: RejectedKey | None = None,
    ) -> Page[RejectedEvent, RejectedKey]:
        """Dead letters with received_at in ``[start, end)`` ordered by (received_at, id)."""
        ...

    async def audit(self, entry: AuditEntry) -> None:
        """Write one audit row in its own transaction."""
        ...

    async def list_audit(self, *, action: str | None = None, limit: int = 100) -> list[AuditRecord]:
        """Newest audit rows first."""
        ...

    # -- credentials (stored as sha256 hex of the secret; see ``hash_secret``) -------------------------
    # ``actor`` names who asked (``cli:alice``); when given, the create or revoke writes an audit row
    # (``api_token.create``, ``ingest_credential.revoke``, ...) in the same transaction.
    async def create_ingest_credential(
        self,
        *,
        platform: str,
        cloud: str,
        token_hash: str,
        description: str | None = None,
        expires_at: datetime | None = None,
        actor: str | None = None,
    ) -> IngestCredential: ...

    async def ingest_credential_by_hash(
        self, token_hash: str, *, at: datetime | None = None
    ) -> IngestCredential | None:
        """The credential with this hash unless revoked or expired at ``at`` (default: now)."""
        ...

    async def list_ingest_credentials(self) -> list[IngestCredential]:
        """Every credential, revoked and expired ones too, oldest first."""
        ...

    async def revoke_ingest_credential(self, credential_id: str, *, actor: str | None = None) -> bool:
        """Revoke now; False when there is no such credential or it was revoked already."""
        ...

    async def create_api_token(
        self,
        *,
        token_hash: str,
        role: TokenRole,
        project_ids: Sequence[str] = (),
        description: str | None = None,
        expires_at: datetime | None = None,
        actor: str | None = None,
    ) -> ApiToken:
        """Raises ``RuleViolation`` when role is ``project`` and ``project_ids`` is empty."""
        ...

    async def api_token_by_hash(self, token_hash: str, *, at: datetime | None = None) -> ApiToken | None:
        """The token with this hash unless revoked or expired at ``at`` (default: now)."""
        ...

    async def list_api_tokens(self) -> list[ApiToken]:
        """Every token, revoked and expired ones too, oldest first."""
        ...

    async def revoke_api_token(self, token_id: str, *, actor: str | None = None) -> bool:
        """Revoke now; False when there is no such token or it was revoked already."""
        ...

    async def shared_secret(self, name: str) -> bytes:
        """The deployment's secret ``name`` (32 random bytes), created on first use. Every process and
        replica on this store gets the same bytes: concurrent first uses agree on one."""
        ...

    # -- reconciliation -------------------------------------------------------------------------------
    async def start_sync_run(self, cloud: str, started_at: datetime | None = None) -> str:
        """Insert a sync_runs row at status running; return its id."""
        ...

    async def finish_sync_run(
        self, run_id: str, status: SyncStatus, stats: Mapping[str, Any], completed_at: datetime | None = None
    ) -> None: ...

    async def last_completed_sync_started_at(self, cloud: str) -> datetime | None:
        """Newest started_at of the cloud's completed runs (a failed run never moves it)."""
        ...

    async def fail_stale_sync_runs(self, cloud: str, at: datetime | None = None) -> list[str]:
        """Mark every ``running`` row of ``cloud`` failed, the reason in its stats' ``errors`` and no
        ``completed_at``; the ids. Only for a holder of the cloud's ``sync_lock``: a row still running
        then is one whose holder stopped without ending it. ``at`` (default now) dates the finding."""
        ...

    async def get_sync_run(self, run_id: str) -> dict[str, Any] | None:
        """``{id, cloud, started_at, completed_at, status, stats}`` or None."""
        ...

    async def list_sync_runs(self, cloud: str) -> list[dict[str, Any]]:
        """Every run of ``cloud``, oldest ``started_at`` first, each shaped as ``get_sync_run`` answers."""
        ...

    async def sync_runs_between(
        self, cloud: str, after: datetime, before: datetime, *, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """The runs of ``cloud`` with ``after < started_at < before``, oldest first (at most ``limit``),
        shaped as ``get_sync_run`` answers."""
        ...

    async def newest_receipt(self) -> datetime | None:
        """The newest ``received_at`` of any stored event (None for a store without events)."""
        ...

    async def sync_receipts(self, keys: Sequence[ResourceKey]) -> dict[ResourceKey, SyncReceipts]:
        """Per key with events: its oldest ``received_at`` and the ``payload.provider.sync_run_id`` of
        each of its reconciliation events."""
        ...

    async def late_keys(
        self,
        cloud: str,
        received_after: datetime,
        dated_before: datetime,
        *,
        except_types: Sequence[str] = (),
    ) -> list[ResourceKey]:
        """The keys of ``cloud`` with an event received after ``received_after`` and dated before
        ``dated_before`` whose type is not one of ``except_types``, in key order: the events a run read
        too early to see."""
        ...

    def sync_lock(self, cloud: str) -> AbstractAsyncContextManager[None]:
        """Hold the per-cloud sync lock for the block; raises ``SyncLockHeld`` at entry when another holder
        has it. PostgreSQL: a session advisory lock on a dedicated connection, keyed by a number of the
        cloud's own and released before the connection closes; SQLite: a lock row with a renewed lease,
        so a crashed holder's lock expires."""
        ...

    # -- lifetime -------------------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Close connections (``open_store`` calls it)."""
        ...
