"""The store: the ``Store`` interface and its roles, its SQLite and PostgreSQL backends, and numbered
migrations.

``open_store(url)`` is the one way in: ``sqlite:///path/to/file`` for the
embedded default, ``postgresql://...`` for production. Both backends pass the
same contract test suite (tests/store).

Inside: the dialect seam a backend supplies (``_sql_dialect``; ``_sqlite``, ``_postgres``), one class
per role of the shared SQL, each holding the dialect (``_sql_*``), and their assembly into a store
(``_sql.SqlStore``).
"""

from ._interface import ApiToken as ApiToken
from ._interface import AuditEntry as AuditEntry
from ._interface import AuditRole as AuditRole
from ._interface import BatchOutcome as BatchOutcome
from ._interface import BillingPeriod as BillingPeriod
from ._interface import BillingRole as BillingRole
from ._interface import CatalogRole as CatalogRole
from ._interface import Conflict as Conflict
from ._interface import CredentialsRole as CredentialsRole
from ._interface import DeadLetter as DeadLetter
from ._interface import EventFilter as EventFilter
from ._interface import EventsRole as EventsRole
from ._interface import IngestCredential as IngestCredential
from ._interface import IngestRole as IngestRole
from ._interface import PagesRole as PagesRole
from ._interface import PeriodLine as PeriodLine
from ._interface import Project as Project
from ._interface import ProjectionRole as ProjectionRole
from ._interface import ProjectsRole as ProjectsRole
from ._interface import RejectedEvent as RejectedEvent
from ._interface import Relation as Relation
from ._interface import ResourceFilter as ResourceFilter
from ._interface import ResourceType as ResourceType
from ._interface import RuleViolation as RuleViolation
from ._interface import SchemaRole as SchemaRole
from ._interface import SchemaStatus as SchemaStatus
from ._interface import SizeName as SizeName
from ._interface import Store as Store
from ._interface import StoredPriceList as StoredPriceList
from ._interface import StoreError as StoreError
from ._interface import StoreUnavailable as StoreUnavailable
from ._interface import SyncLockHeld as SyncLockHeld
from ._interface import SyncLockLost as SyncLockLost
from ._interface import SyncReceipts as SyncReceipts
from ._interface import SyncRecordsRole as SyncRecordsRole
from ._interface import SyncRow as SyncRow
from ._interface import TokenNotUsable as TokenNotUsable
from ._interface import TokenRole as TokenRole
from ._interface import UnsupportedStoreUrl as UnsupportedStoreUrl
from ._interface import UsageScope as UsageScope
from ._open import dialect_of as dialect_of
from ._open import hash_secret as hash_secret
from ._open import open_store as open_store
from ._pg_sync_lock import LEASE_S as SYNC_LOCK_LEASE_S
from ._pool_wait import ConnectionWaits as ConnectionWaits
from ._pool_wait import ConnectionWaitTimeout as ConnectionWaitTimeout
from ._pool_wait import connection_deadline as connection_deadline
from ._probe import ProbeResult as ProbeResult
from ._probe import probe_store as probe_store
from ._retention import RetentionPolicy as RetentionPolicy
from ._upkeep import UpkeepOutcome as UpkeepOutcome
from ._upkeep import events_retention_refusal as events_retention_refusal
from ._upkeep import maintain_events as maintain_events

__all__ = [
    "SYNC_LOCK_LEASE_S",
    "ApiToken",
    "AuditEntry",
    "AuditRole",
    "BatchOutcome",
    "BillingPeriod",
    "BillingRole",
    "CatalogRole",
    "Conflict",
    "ConnectionWaitTimeout",
    "ConnectionWaits",
    "CredentialsRole",
    "DeadLetter",
    "EventFilter",
    "EventsRole",
    "IngestCredential",
    "IngestRole",
    "PagesRole",
    "PeriodLine",
    "ProbeResult",
    "Project",
    "ProjectionRole",
    "ProjectsRole",
    "RejectedEvent",
    "Relation",
    "ResourceFilter",
    "ResourceType",
    "RetentionPolicy",
    "RuleViolation",
    "SchemaRole",
    "SchemaStatus",
    "SizeName",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "StoredPriceList",
    "SyncLockHeld",
    "SyncLockLost",
    "SyncReceipts",
    "SyncRecordsRole",
    "SyncRow",
    "TokenNotUsable",
    "TokenRole",
    "UnsupportedStoreUrl",
    "UpkeepOutcome",
    "UsageScope",
    "connection_deadline",
    "dialect_of",
    "events_retention_refusal",
    "hash_secret",
    "maintain_events",
    "open_store",
    "probe_store",
]
