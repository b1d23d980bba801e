"""The types the Store speaks: its errors, records, filters, pages, sort keys and the batch writer.

Plain values with no I/O, kept apart from the ``Store`` protocol (``_interface``)
that takes and returns them. Identifiers are UUID strings, instants aware UTC
``datetime``s, and a ``Page``'s ``next_key`` is the sort key of its last item
when more items follow (see ``_interface``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, NamedTuple, Protocol, TypeVar

from tally.core import Event, ResourceKey

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


class TokenNotUsable(StoreError):
    """A listing read as an API token (a filter's ``readable_by``) found the token unknown, revoked or
    expired when the page was read: nothing of the page is answered."""


class StoreUnavailable(StoreError):
    """The database does not answer: no connection could be had, or the one in use was lost (the server
    restarted, failed over, or ended the session). Nothing of the failed statement's transaction was
    committed; the same call may work a moment later."""


class SyncLockLost(StoreUnavailable):
    """The session holding a cloud's sync lock was ended while the run went on (a lease that ran out
    while the holder hung, a restart): the run was cancelled, and what it recorded says how it ended."""


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
class BillingPeriod:
    """A cloud's period ``[period_start, period_end)``, closed at ``closed_at`` with ``price_list``."""

    cloud: str
    period_start: datetime
    period_end: datetime
    price_list: str
    closed_at: datetime


@dataclass(frozen=True, slots=True)
class PeriodLine:
    """A frozen line of a closed period: ``kind`` ``closed`` (rated at the close) or ``correction``
    (a difference found later, with its ``reason`` and ``sync_run``); ``line`` is the rated line's
    JSON. Invariant: never changed once stored, but for ``delivered_at``, set once."""

    seq: int
    kind: str
    line: Mapping[str, Any]
    reason: str | None
    sync_run: str | None
    recorded_at: datetime
    delivered_at: datetime | None


@dataclass(frozen=True, slots=True)
class PriceListVersion:
    """One stored version of a price list: its canonical document (amounts as decimal texts)."""

    effective_from: datetime
    document: Mapping[str, Any]
    loaded_at: datetime


@dataclass(frozen=True, slots=True)
class StoredPriceList:
    """A named price list. Invariant: ``versions`` ascend by ``effective_from``, all in ``currency``."""

    name: str
    currency: str
    versions: tuple[PriceListVersion, ...]


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
    """One page of a listing. ``numbers_plain``: its maker checked that every number in ``items`` is
    an integer within 64 bits or a float that orjson and ``json.dumps`` write alike (False: unchecked)."""

    items: list[T]
    next_key: K | None
    numbers_plain: bool = False


@dataclass(frozen=True, slots=True)
class EventFilter:
    """Equality filters on events, plus the half-open window ``[start, end)`` on ``timestamp``.

    ``readable_by``: the hash of the API token the page is read for. The page's statement itself checks
    that the token is usable (so an API process that remembers a token's role spends no round trip of
    its own on it), and a listing raises ``TokenNotUsable`` when it is not."""

    cloud: str | None = None
    platform: str | None = None
    project_id: str | None = None
    resource_type: str | None = None
    event_type: str | None = None
    source: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    readable_by: str | None = None


@dataclass(frozen=True, slots=True)
class ResourceFilter:
    """Equality filters on projection rows; ``status`` active = not deleted, deleted = deleted;
    ``readable_by`` as ``EventFilter``'s."""

    cloud: str | None = None
    platform: str | None = None
    project_id: str | None = None
    resource_type: str | None = None
    state: str | None = None
    status: ResourceStatus = "active"
    readable_by: str | None = None


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
