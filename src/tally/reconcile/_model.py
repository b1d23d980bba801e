"""What a run observes, what it decides, and what it answers: plain data, no behaviour.

The adapter fills an ``Observation`` with facts and evidence (state, size, the
platform's instants, whether the platform is still changing a resource); the
framework's rules turn it into ``Correction`` values. Keeping the evidence raw
here is what lets one set of rules serve every platform.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol


class Deferral(enum.Enum):
    """Why a correction was left to a later run."""

    TRANSITIONAL = "transitional"  # the platform is still changing the resource
    RECENT = "recent"  # the change lies inside the settle window (or after the run's instant)


class Kind(enum.Enum):
    """The three synthetic event kinds a run books; the value is the synthetic id's ``kind``."""

    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"


class Reason(enum.Enum):
    """Why a correction was booked; written into ``payload.provider.reason``."""

    MISSED_CREATE = "missed create"
    DRIFT = "drift"
    REPORTED_DELETE = "reported delete"
    ABSENT = "absent from a complete listing"


@dataclass(frozen=True, slots=True)
class ObservedResource:
    """One live resource as the platform lists it.

    Invariant: instants are aware UTC. ``size`` None means the platform did not
    describe it this run (a missing size counts as unchanged). ``changed_at`` is the
    platform's last change (updated, else created); None means no instant was given,
    and such a resource is never deferred as recent. ``created_state`` and
    ``created_size`` are the facts the platform creates every such resource with,
    where it defines them (what the collector's own create carries: an instance is
    launched active, a load balancer starts with no listener and no pool); None
    means the listing's facts are the best known.
    """

    resource_type: str
    resource_id: str
    project_id: str
    state: str
    size: Mapping[str, Any] | None
    created_at: datetime | None
    changed_at: datetime | None
    transitional: bool = False
    created_state: str | None = None
    created_size: Mapping[str, Any] | None = None


class ProjectionRow(Protocol):
    """What the rules read of a projection row: ``tally.store.SyncRow`` (a sync's slim read) and
    ``tally.core.ResourceRow`` both provide it. ``size`` may be None only for a deleted row."""

    @property
    def project_id(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def size(self) -> Mapping[str, Any] | None: ...
    @property
    def last_event_at(self) -> datetime: ...
    @property
    def is_live(self) -> bool: ...
    @property
    def created_at(self) -> datetime | None: ...
    @property
    def first_event_at(self) -> datetime | None: ...


@dataclass(frozen=True, slots=True)
class DeletedResource:
    """A deletion the platform reported itself (nova's deleted-servers listing), with its instant.

    ``created_at`` is the instant the resource came into use (nova's launched_at), None when the
    platform never put it in use; with ``state`` (the state it was put in use in) and ``size`` it is
    what books a whole life the projection holds no row of.
    """

    resource_type: str
    resource_id: str
    project_id: str
    deleted_at: datetime
    created_at: datetime | None = None
    state: str | None = None
    size: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Observation:
    """What one run saw of one cloud.

    Invariant: ``incomplete_types`` is a subset of ``enumerated_types``; only a
    type enumerated and not incomplete may conclude that an unnamed row is gone.
    """

    resources: tuple[ObservedResource, ...]
    deleted: tuple[DeletedResource, ...]
    enumerated_types: frozenset[str]
    incomplete_types: frozenset[str]
    errors: tuple[str, ...] = ()

    @property
    def complete_types(self) -> frozenset[str]:
        return self.enumerated_types - self.incomplete_types


@dataclass(frozen=True, slots=True)
class SizeNameEntry:
    """One platform id of a size member and the name it stands for (a cinder volume type)."""

    resource_type: str
    member: str
    value: str
    name: str


@dataclass(frozen=True, slots=True)
class Correction:
    """One synthetic event a run decided to book."""

    kind: Kind
    reason: Reason
    resource_type: str
    resource_id: str
    project_id: str
    timestamp: datetime
    state: str | None = None
    size: Mapping[str, Any] | None = None
    changes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # The instant the rule asked for, when the row's newest event forced a later one.
    requested_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class DeferredCorrection:
    """One correction a run left to a later run, by resource: what it would have booked and why not."""

    resource_type: str
    resource_id: str
    kind: Kind
    reason: Deferral

    def to_json(self) -> dict[str, str]:
        return {
            "resource_type": self.resource_type,
            "resource_id": self.resource_id,
            "kind": self.kind.value,
            "reason": self.reason.value,
        }


@dataclass(frozen=True, slots=True)
class EarlierRun:
    """One earlier run of a cloud as its sync_runs row records it, for dating a delete by absence and
    for telling what it vouched for.

    ``rows_through`` is the newest event receipt the store held once the run had read the projection
    (None: the store held no event then); ``rows_recorded`` is False for a run that recorded none (it
    ended before reading the rows, or ran before runs recorded it). ``corrected`` holds the keys the run
    booked or deferred a correction for.
    """

    started_at: datetime
    completed: bool
    complete_types: frozenset[str]
    rows_through: datetime | None
    corrected: frozenset[tuple[str, str]]
    rows_recorded: bool = True
    # The run's id (what its corrections name in ``payload.provider.sync_run_id``) and the keys it
    # deferred a correction for: what tells whether it vouched for a row.
    run_id: str = ""
    deferred: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True, slots=True)
class Plan:
    """The diff's answer: corrections to book, in key order, the deferred counts, and what was deferred
    (in key order), so a later reader can tell which run could have booked a correction."""

    corrections: tuple[Correction, ...]
    deferred: Mapping[Deferral, int]
    deferred_corrections: tuple[DeferredCorrection, ...] = ()


class Status(enum.Enum):
    """The outcome of asking for a run."""

    COMPLETED = "completed"  # the run finished with no recorded error: 200
    FAILED = "failed"  # the run recorded at least one error: 500, reasons in the row
    LOCK_HELD = "lock_held"  # another run holds the cloud: 409, no row written
    NOT_DUE = "not_due"  # a scheduled run found the cloud synced within its interval: skipped, no row
    UNKNOWN_CLOUD = "unknown_cloud"  # the clouds config names no such cloud: 404
    # The run waited its whole budget for a sync slot or a database connection before it could record
    # itself: 503, no row written, ``stats["errors"]`` holds the one reason naming the wait.
    NOT_STARTED = "not_started"


@dataclass(frozen=True, slots=True)
class SyncOutcome:
    """What a run answers its caller; ``stats`` is the row's stats document."""

    status: Status
    cloud: str
    sync_run_id: str | None = None
    stats: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The 200 body: the run id and the corrections it booked."""
        return {
            "sync_run_id": self.sync_run_id,
            "stats": {k: self.stats.get(k, 0) for k in ("created", "updated", "deleted")},
        }
