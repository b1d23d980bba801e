"""The store: the ``Store`` interface, its SQLite and PostgreSQL backends, and numbered migrations.

``open_store(url)`` is the one way in: ``sqlite:///path/to/file`` for the
embedded default, ``postgresql://...`` for production. Both backends pass the
same contract test suite (tests/store).
"""

from ._interface import EVENT_GROUPS as EVENT_GROUPS
from ._interface import RESOURCE_GROUPS as RESOURCE_GROUPS
from ._interface import ApiToken as ApiToken
from ._interface import AuditEntry as AuditEntry
from ._interface import AuditRecord as AuditRecord
from ._interface import BatchOutcome as BatchOutcome
from ._interface import BillingPeriod as BillingPeriod
from ._interface import Bucket as Bucket
from ._interface import Conflict as Conflict
from ._interface import CredentialStatus as CredentialStatus
from ._interface import DeadLetter as DeadLetter
from ._interface import EventFilter as EventFilter
from ._interface import EventKey as EventKey
from ._interface import IngestCredential as IngestCredential
from ._interface import MigrationError as MigrationError
from ._interface import Page as Page
from ._interface import PeriodLine as PeriodLine
from ._interface import PriceListVersion as PriceListVersion
from ._interface import Project as Project
from ._interface import RejectedEvent as RejectedEvent
from ._interface import RejectedKey as RejectedKey
from ._interface import Relation as Relation
from ._interface import ResourceFilter as ResourceFilter
from ._interface import ResourceStatus as ResourceStatus
from ._interface import ResourceType as ResourceType
from ._interface import RuleViolation as RuleViolation
from ._interface import SchemaStatus as SchemaStatus
from ._interface import SizeName as SizeName
from ._interface import Store as Store
from ._interface import StoredPriceList as StoredPriceList
from ._interface import StoreError as StoreError
from ._interface import StoreUnavailable as StoreUnavailable
from ._interface import SyncLockHeld as SyncLockHeld
from ._interface import SyncReceipts as SyncReceipts
from ._interface import SyncRow as SyncRow
from ._interface import SyncStatus as SyncStatus
from ._interface import TokenNotUsable as TokenNotUsable
from ._interface import TokenRole as TokenRole
from ._interface import UnsupportedStoreUrl as UnsupportedStoreUrl
from ._interface import UsageScope as UsageScope
from ._open import dialect_of as dialect_of
from ._open import hash_secret as hash_secret
from ._open import open_store as open_store
from ._partitions import PartitionStats as PartitionStats
from ._pg_sync_lock import LEASE_S as SYNC_LOCK_LEASE_S
from ._pool_wait import ConnectionWaits as ConnectionWaits
from ._pool_wait import ConnectionWaitTimeout as ConnectionWaitTimeout
from ._pool_wait import connection_deadline as connection_deadline
from ._probe import ProbeResult as ProbeResult
from ._probe import probe_store as probe_store
from ._retention import RetentionPolicy as RetentionPolicy
from ._retention import RetiredMonth as RetiredMonth
from ._upkeep import UpkeepOutcome as UpkeepOutcome
from ._upkeep import archived_month_usage as archived_month_usage
from ._upkeep import events_partition_stats as events_partition_stats
from ._upkeep import events_retention_refusal as events_retention_refusal
from ._upkeep import maintain_events as maintain_events

__all__ = [
    "EVENT_GROUPS",
    "RESOURCE_GROUPS",
    "SYNC_LOCK_LEASE_S",
    "ApiToken",
    "AuditEntry",
    "AuditRecord",
    "BatchOutcome",
    "BillingPeriod",
    "Bucket",
    "Conflict",
    "ConnectionWaitTimeout",
    "ConnectionWaits",
    "CredentialStatus",
    "DeadLetter",
    "EventFilter",
    "EventKey",
    "IngestCredential",
    "MigrationError",
    "Page",
    "PartitionStats",
    "PeriodLine",
    "PriceListVersion",
    "ProbeResult",
    "Project",
    "RejectedEvent",
    "RejectedKey",
    "Relation",
    "ResourceFilter",
    "ResourceStatus",
    "ResourceType",
    "RetentionPolicy",
    "RetiredMonth",
    "RuleViolation",
    "SchemaStatus",
    "SizeName",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "StoredPriceList",
    "SyncLockHeld",
    "SyncReceipts",
    "SyncRow",
    "SyncStatus",
    "TokenNotUsable",
    "TokenRole",
    "UnsupportedStoreUrl",
    "UpkeepOutcome",
    "UsageScope",
    "archived_month_usage",
    "connection_deadline",
    "dialect_of",
    "events_partition_stats",
    "events_retention_refusal",
    "hash_secret",
    "maintain_events",
    "open_store",
    "probe_store",
]
