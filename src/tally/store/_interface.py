"""The Store interface: everything Tally reads from and writes to its database.

Two backends implement it (SQLite for the embedded default, PostgreSQL for
production) and one contract test suite holds both to it. Callers code against
``Store`` only; ``open_store(url)`` picks the backend from the URL scheme.

Identifiers of projects, relations, tokens, credentials, rejected events and
sync runs are UUID strings. Every instant is an aware UTC ``datetime``.
Pagination is keyset: a read returns a ``Page`` whose ``next_key`` is the sort
key of its last item when more items follow (``None`` otherwise); the caller
passes it back as ``after`` (the HTTP layer turns it into an opaque cursor).

The types it speaks (errors, records, filters, pages) live in ``_records`` and
are re-exported here, so ``from ._interface import ...`` names them all.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol

from tally.core import Event, ResourceKey, ResourceRow, StoredEvent, UsageFact

from ._credential_types import ApiToken as ApiToken
from ._credential_types import CredentialStatus as CredentialStatus
from ._credential_types import IngestCredential as IngestCredential
from ._credential_types import TokenRole as TokenRole
from ._records import EVENT_GROUPS as EVENT_GROUPS
from ._records import RESOURCE_GROUPS as RESOURCE_GROUPS
from ._records import AuditEntry as AuditEntry
from ._records import AuditRecord as AuditRecord
from ._records import BatchOutcome as BatchOutcome
from ._records import BatchWriter as BatchWriter
from ._records import BillingPeriod as BillingPeriod
from ._records import Bucket as Bucket
from ._records import Conflict as Conflict
from ._records import DeadLetter as DeadLetter
from ._records import EventFilter as EventFilter
from ._records import EventKey as EventKey
from ._records import MigrationError as MigrationError
from ._records import Page as Page
from ._records import PeriodLine as PeriodLine
from ._records import PriceListVersion as PriceListVersion
from ._records import Project as Project
from ._records import RejectedEvent as RejectedEvent
from ._records import RejectedKey as RejectedKey
from ._records import Relation as Relation
from ._records import ResourceFilter as ResourceFilter
from ._records import ResourceStatus as ResourceStatus
from ._records import ResourceType as ResourceType
from ._records import RuleViolation as RuleViolation
from ._records import SchemaStatus as SchemaStatus
from ._records import SizeName as SizeName
from ._records import StoredPriceList as StoredPriceList
from ._records import StoreError as StoreError
from ._records import StoreUnavailable as StoreUnavailable
from ._records import SyncLockHeld as SyncLockHeld
from ._records import SyncReceipts as SyncReceipts
from ._records import SyncRow as SyncRow
from ._records import SyncStatus as SyncStatus
from ._records import TokenNotUsable as TokenNotUsable
from ._records import UnsupportedStoreUrl as UnsupportedStoreUrl
from ._records import UsageScope as UsageScope


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

    async def write_check(self) -> None:
        """A write that changes nothing, committed: raises ``StoreUnavailable`` naming why when the
        store cannot write now (PostgreSQL read-only; SQLite's file on a full disk or read-only)."""
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

    async def learn_size_names(self, cloud: str, rows: Sequence[SizeName]) -> list[SizeName]:
        """Store the names of ``rows`` (rows already known with the same name are no change; a row
        an earlier listing stored and this one lacks stays) and, in the same transaction, write each
        new name into the projection rows whose size still holds its value; returns what was new."""
        ...

    # -- resource types -------------------------------------------------------------------------------
    async def get_resource_type(self, platform: str, resource_type: str) -> ResourceType | None: ...

    async def put_price_list(
        self,
        name: str,
        currency: str,
        versions: Sequence[tuple[datetime, Mapping[str, Any]]],
        *,
        now: datetime | None = None,
    ) -> StoredPriceList:
        """Store a price list's versions (each (effective_from, canonical document)), in one
        transaction: a version already in force at ``now`` must be given unchanged (else
        ``RuleViolation`` naming it, and nothing changes); versions not yet in force are replaced
        by the given ones. A list keeps its currency (``RuleViolation`` otherwise)."""
        ...

    async def get_price_list(self, name: str) -> StoredPriceList | None: ...

    async def close_period(self, period: BillingPeriod, lines: Sequence[Mapping[str, Any]]) -> None:
        """Store a closed period and its rated lines (kind ``closed``, in order), in one transaction;
        ``Conflict`` naming it when the period is already closed. The database refuses any later
        change of either (triggers on both backends)."""
        ...

    async def get_period(self, cloud: str, period_start: datetime) -> BillingPeriod | None: ...

    async def list_periods(self, cloud: str | None = None) -> list[BillingPeriod]:
        """Closed periods by cloud and start."""
        ...

    async def period_lines(self, cloud: str, period_start: datetime) -> list[PeriodLine]:
        """A closed period's lines in order: those of the close, then each correction."""
        ...

    async def add_period_corrections(
        self,
        cloud: str,
        period_start: datetime,
        lines: Sequence[Mapping[str, Any]],
        *,
        reason: str,
        sync_run: str | None,
        at: datetime,
    ) -> int:
        """Append correction lines to a closed period (after its last line); how many were added."""
        ...

    async def deliver_corrections(
        self, cloud: str, period_start: datetime, seqs: Sequence[int], at: datetime
    ) -> None:
        """Mark correction lines delivered at ``at`` (once: a line delivered before is refused)."""
        ...

    async def list_price_lists(self) -> list[StoredPriceList]:
        """Every price list by name, its versions ascending."""
        ...

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

    def open_usage_stream(
        self, scope: UsageScope, *, rows: int = ...
    ) -> AbstractAsyncContextManager[AsyncIterator[list[tuple[ResourceKey, list[UsageFact]]]]]:
        """Every resource of ``scope`` in key order with its facts (``tally.core.UsageFact``: the
        ``usage_histories`` events as the fast fold reads them), in lists of whole histories, read in
        chunks of about ``rows`` rows while the body of the ``async with`` consumes them."""
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

    async def relations_between(
        self, start: datetime, end: datetime, *, relation_type: str
    ) -> list[Relation]:
        """The relations of ``relation_type`` valid at some instant of ``[start, end)``, by ``valid_from``
        (an invoice's billing accounts: a project may move between two inside its period)."""
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
