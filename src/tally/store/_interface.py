"""The Store interface: everything Tally reads from and writes to its database.

Two backends implement it (SQLite for the embedded default, PostgreSQL for
production) and one contract test suite holds both to it. A consumer codes
against the roles it uses, the composition root against ``Store``;
``open_store(url)`` picks the backend from the URL scheme.

Identifiers of projects, relations, tokens, credentials, rejected events and
sync runs are UUID strings. Every instant is an aware UTC ``datetime``.
Pagination is keyset: a read returns a ``Page`` whose ``next_key`` is the sort
key of its last item when more items follow (``None`` otherwise); the caller
passes it back as ``after`` (the HTTP layer turns it into an opaque cursor).

The methods are grouped in roles (``_roles_record``: schema, ingest, events, projection, pages;
``_roles_registry``: catalog, billing, projects, audit, credentials, sync records), so that a
consumer can take the narrowest (docs/architecture.md, "The store's roles", says who takes which).
The types it speaks (errors, records, filters, pages) live in ``_records`` and are re-exported here,
so ``from ._interface import ...`` names them all.
"""

from __future__ import annotations

from typing import Protocol

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
from ._records import SyncLockLost as SyncLockLost
from ._records import SyncReceipts as SyncReceipts
from ._records import SyncRow as SyncRow
from ._records import SyncStatus as SyncStatus
from ._records import TokenNotUsable as TokenNotUsable
from ._records import UnsupportedStoreUrl as UnsupportedStoreUrl
from ._records import UsageScope as UsageScope
from ._roles_record import EventsRole as EventsRole
from ._roles_record import IngestRole as IngestRole
from ._roles_record import PagesRole as PagesRole
from ._roles_record import ProjectionRole as ProjectionRole
from ._roles_record import SchemaRole as SchemaRole
from ._roles_registry import AuditRole as AuditRole
from ._roles_registry import BillingRole as BillingRole
from ._roles_registry import CatalogRole as CatalogRole
from ._roles_registry import CredentialsRole as CredentialsRole
from ._roles_registry import ProjectsRole as ProjectsRole
from ._roles_registry import SyncRecordsRole as SyncRecordsRole


class Store(
    SchemaRole,
    IngestRole,
    EventsRole,
    ProjectionRole,
    PagesRole,
    CatalogRole,
    BillingRole,
    ProjectsRole,
    AuditRole,
    CredentialsRole,
    SyncRecordsRole,
    Protocol,
):
    """The one storage interface: every role (``_roles_record``, ``_roles_registry``). Every method is
    a coroutine unless it returns a context manager."""

    # -- lifetime -------------------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Close connections (``open_store`` calls it)."""
        ...
