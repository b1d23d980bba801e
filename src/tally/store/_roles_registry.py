"""The store's roles around the record: the catalog (resource types and size names), billing (price
lists and periods), projects and their relations, rejected events and the audit, credentials, and the
sync runs with their lock. ``Store`` is all of the roles (``_interface``); a consumer that needs one
role takes that role.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol

from tally.core import ResourceKey

from ._credential_types import (
    ApiToken,
    IngestCredential,
    TokenRole,
)
from ._records import (
    AuditEntry,
    AuditRecord,
    BillingPeriod,
    Page,
    PeriodLine,
    Project,
    RejectedEvent,
    RejectedKey,
    Relation,
    ResourceType,
    SizeName,
    StoredPriceList,
    SyncReceipts,
    SyncStatus,
)


class CatalogRole(Protocol):
    """The catalog of types and names: resource types with their size schemas, and the names a
    cloud's size ids are read with (flavors, volume types)."""

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

    # -- size names -----------------------------------------------------------------------------------
    async def size_names(self, cloud: str) -> list[SizeName]:
        """The size-name rows of one cloud."""
        ...

    async def learn_size_names(self, cloud: str, rows: Sequence[SizeName]) -> list[SizeName]:
        """Store the names of ``rows`` (rows already known with the same name are no change; a row
        an earlier listing stored and this one lacks stays) and, in the same transaction, write each
        new name into the projection rows whose size still holds its value; returns what was new."""
        ...


class BillingRole(Protocol):
    """Price lists and billing periods."""

    # -- price lists ----------------------------------------------------------------------------------

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

    async def list_price_lists(self) -> list[StoredPriceList]:
        """Every price list by name, its versions ascending."""
        ...

    # -- billing periods ------------------------------------------------------------------------------

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


class ProjectsRole(Protocol):
    """Projects and their relations over time."""

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


class AuditRole(Protocol):
    """Rejected events and the audit trail."""

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


class CredentialsRole(Protocol):
    """Ingest credentials, API tokens and the shared secrets."""

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


class SyncRecordsRole(Protocol):
    """Sync runs, their receipts and the per-cloud sync lock."""

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
