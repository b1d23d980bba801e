"""The ingest pipeline: one entry point for the events route, the in-process sender and the sync.

Order of work (spec events.md, "Ingest order of work"): validate each item,
check its scope, replace size names, check the size schema; then, in ONE store
transaction, insert the survivors (a conflict on (event_id, timestamp) is a
duplicate), fold them into the projection per key in key order, and write the
dead letters and audit rows. Every refused item says why, naming the member;
what the same batch got right is kept.

The store's transaction opens before the validation, told the resources the
raw items name, and takes the survivors a chunk at a time: PostgreSQL locks,
reads and inserts while the next chunk is validated. So everything the
validation looks up (size names, size schemas) is read first, outside it: the
open batch may hold the store's only connection.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from tally.core import Event, EventInvalid, ResourceKey, name_event_size, parse_event, utc_now
from tally.store import AuditEntry, CatalogRole, DeadLetter, IngestRole, ResourceType, SizeName

from . import _metrics as metrics
from ._counted import RegisteredTypes, count_outcome
from ._schemas import SchemaCache, SizeValidator

log = logging.getLogger(__name__)

MAX_BATCH = 1000
# One event's compact UTF-8 JSON at most; a larger item is that item's refusal, not the batch's.
MAX_EVENT_BYTES = 64 * 1024
MAX_RAW_BYTES = 64 * 1024
# Items validated before their survivors go to the store, which inserts them while the next are read.
VALIDATE_CHUNK = 100
SCOPE_VIOLATION = "events.scope_violation"


class BatchTooLarge(ValueError):
    """More than 1000 items in one batch: nothing of it is stored (the API answers 413)."""

    def __init__(self, count: int) -> None:
        super().__init__(f"a batch holds at most {MAX_BATCH} events, got {count}")
        self.count = count


@dataclass(frozen=True, slots=True)
class IngestScope:
    """What an ingest credential may write: events of one platform and cloud."""

    platform: str
    cloud: str
    actor: str = "ingest"


@dataclass(frozen=True, slots=True)
class EventRejection:
    """One item of a batch the pipeline refused: its index in the batch, its id if it had one, why."""

    index: int
    event_id: str | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "event_id": self.event_id, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class IngestResult:
    accepted: int
    duplicates: int
    rejected: list[EventRejection] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "accepted": self.accepted,
            "duplicates": self.duplicates,
            "rejected": [r.to_json() for r in self.rejected],
        }


def _clean(value: Any) -> Any:
    """A JSON value PostgreSQL's jsonb can hold: NUL and lone surrogates become visible text."""
    if isinstance(value, str):
        if "\x00" in value:
            value = value.replace("\x00", "\\u0000")
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, Mapping):
        return {str(_clean(k)): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def stored_raw(item: object) -> Any:
    """The dead letter's raw column: the item, or its size when it is over 64 KiB or not JSON."""
    cleaned = _clean(item)
    try:
        text = json.dumps(cleaned, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return {
            "not_stored": {"bytes": len(repr(item).encode("utf-8", "backslashreplace")), "reason": "not JSON"}
        }
    size = len(text.encode("utf-8"))
    if size > MAX_RAW_BYTES:
        return {"not_stored": {"bytes": size}}
    return cleaned


def _event_id_of(item: object) -> str | None:
    try:
        value = item.get("event_id") if isinstance(item, Mapping) else None
    except Exception:  # an unreadable item has no id to report
        return None
    return value[:256] if isinstance(value, str) else None


def _refuse(refusals: _Refusals, index: int, item: object, reason: str, cloud: str) -> None:
    """Report the item, dead-letter it with its raw value, and count it."""
    try:
        raw = stored_raw(item)
    except Exception:  # the dead letter still says why, when the item cannot even be copied
        raw = {"not_stored": {"reason": "not readable"}}
    refusals.rejected.append(EventRejection(index, _event_id_of(item), reason))
    refusals.dead.append(DeadLetter(reason=reason, raw=raw))
    metrics.EVENTS_REJECTED.labels(cloud=cloud, reason=reason.split(":", 1)[0]).inc()


def _json_problem(item: object) -> str | None:
    """Why the item cannot be stored as JSON text (or is larger than ``MAX_EVENT_BYTES``), or None."""
    try:
        size = len(orjson.dumps(item))
    except TypeError as exc:
        if "Integer exceeds" not in str(exc):
            return f"schema: the event is not storable JSON ({exc})"
        # Integers beyond 64 bits, which orjson refuses: the standard library writes them.
        size = len(
            json.dumps(item, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
        )
    if size > MAX_EVENT_BYTES:
        return f"schema: the event is {size} bytes as JSON, more than the {MAX_EVENT_BYTES} an event may hold"
    return None


@dataclass(frozen=True, slots=True)
class _Lookups:
    """What the validation of one batch reads from the store, read before its transaction opens."""

    names: Mapping[str, Mapping[tuple[str, str, str], str]]
    validators: Mapping[tuple[str, str], SizeValidator | None]
    unreadable: Mapping[int, str]


@dataclass(slots=True)
class _Refusals:
    """The refused items of one batch: the answer's entries, the dead letters and the audit rows."""

    rejected: list[EventRejection] = field(default_factory=list)
    dead: list[DeadLetter] = field(default_factory=list)
    audits: list[AuditEntry] = field(default_factory=list)


@dataclass(slots=True)
class _Named:
    """What the raw items name, read before validation; ``unreadable`` maps an item's index to why
    it could not even be read (it is refused without validation: its key was not taken)."""

    clouds: set[str] = field(default_factory=set)
    pairs: set[tuple[str, str]] = field(default_factory=set)
    keys: set[ResourceKey] = field(default_factory=set)
    unreadable: dict[int, str] = field(default_factory=dict)


def _unreadable_reason(exc: Exception) -> str:
    return f"schema: the event could not be read ({type(exc).__name__}: {exc})"


def _named(items: Sequence[object], scope: IngestScope | None) -> _Named:
    """Read from the raw items before validation, which keeps these members as they are: the
    resource keys they name, and the clouds and (platform, resource type) pairs whose size names and
    schemas the sized items inside the scope need."""
    named = _Named()
    for index, item in enumerate(items):
        try:
            _name_one(item, scope, named)
        except Exception as exc:  # an in-process caller's object: one bad item costs only itself
            named.unreadable[index] = _unreadable_reason(exc)
    return named


def _name_one(item: object, scope: IngestScope | None, named: _Named) -> None:
    clouds, pairs, keys = named.clouds, named.pairs, named.keys
    if isinstance(item, Mapping):
        platform, cloud = item.get("platform"), item.get("cloud")
        resource_type, resource_id = item.get("resource_type"), item.get("resource_id")
        if not (isinstance(platform, str) and isinstance(cloud, str) and isinstance(resource_type, str)):
            return
        if scope is not None and (platform, cloud) != (scope.platform, scope.cloud):
            return
        if isinstance(resource_id, str):
            keys.add(ResourceKey(cloud, resource_type, resource_id))
        payload = item.get("payload")
        if isinstance(payload, Mapping) and payload.get("size") is not None:
            clouds.add(cloud)
            pairs.add((platform, resource_type))


class PipelineStore(IngestRole, CatalogRole, Protocol):
    """What the pipeline uses: the batch it writes, and the catalog it checks and names sizes by."""


class IngestPipeline:
    """Validate, name, check, deduplicate and fold a batch of wire events into the store."""

    def __init__(
        self, store: PipelineStore, *, require_size_schema: bool, schema_ttl_s: float = 30.0
    ) -> None:
        self._store = store
        self._require_size_schema = require_size_schema
        self._schemas = SchemaCache(store, ttl_s=schema_ttl_s)
        self._types = RegisteredTypes(store, ttl_s=schema_ttl_s)

    async def put_resource_type(
        self, platform: str, resource_type: str, document: Mapping[str, Any]
    ) -> ResourceType:
        """Compile (raising ``SizeSchemaInvalid``), store, and use the schema from the next item on."""
        registered = await self._schemas.put(platform, resource_type, document)
        self._types.invalidate()
        return registered

    def invalidate_schema(self, platform: str, resource_type: str) -> None:
        self._schemas.invalidate(platform, resource_type)
        self._types.invalidate()

    async def _names_of(self, cloud: str) -> dict[tuple[str, str, str], str]:
        rows: list[SizeName] = await self._store.size_names(cloud)
        return {(r.resource_type, r.member, r.value): r.name for r in rows}

    async def ingest(
        self, items: Sequence[object], *, source: str = "collector", scope: IngestScope | None = None
    ) -> IngestResult:
        if len(items) > MAX_BATCH:
            raise BatchTooLarge(len(items))
        began = time.monotonic()
        named = _named(items, scope)
        lookups = _Lookups(
            names={cloud: await self._names_of(cloud) for cloud in named.clouds},
            validators={pair: await self._schemas.validator(*pair) for pair in named.pairs},
            unreadable=named.unreadable,
        )
        await self._types.refresh_if_stale()
        refusals = _Refusals()
        async with self._store.open_batch(named.keys, received_at=utc_now()) as batch:
            for start in range(0, len(items), VALIDATE_CHUNK):
                survivors = self._validate(items, start, source, scope, lookups, refusals)
                if survivors:
                    await batch.add(survivors)
            outcome = await batch.finish(dead_letters=refusals.dead, audits=refusals.audits)
        metrics.BATCH_DURATION.labels(source).observe(time.monotonic() - began)
        count_outcome(outcome, self._types)
        rejected = refusals.rejected
        if rejected:
            log.info(
                "ingest batch items=%d accepted=%d duplicates=%d rejected=%d first_reason=%s",
                len(items),
                len(outcome.inserted),
                len(outcome.duplicates),
                len(rejected),
                rejected[0].reason,
            )
        return IngestResult(
            len(outcome.inserted), len(outcome.duplicates), sorted(rejected, key=lambda r: r.index)
        )

    def _validate(
        self,
        items: Sequence[object],
        start: int,
        source: str,
        scope: IngestScope | None,
        lookups: _Lookups,
        refusals: _Refusals,
    ) -> list[Event]:
        """The survivors among ``VALIDATE_CHUNK`` items from ``start``; the refusals go to ``refusals``."""
        survivors: list[Event] = []
        label_cloud = scope.cloud if scope is not None else "unknown"
        for index in range(start, min(start + VALIDATE_CHUNK, len(items))):
            item = items[index]
            unreadable = lookups.unreadable.get(index)
            if unreadable is not None:
                _refuse(refusals, index, item, unreadable, label_cloud)
                continue
            try:
                event = self._one(index, item, source, scope, lookups, refusals)
            except Exception as exc:  # whatever raised it, one item's failure is that item's rejection
                _refuse(refusals, index, item, _unreadable_reason(exc), label_cloud)
                continue
            if event is not None:
                survivors.append(event)
        return survivors

    def _one(
        self,
        index: int,
        item: object,
        source: str,
        scope: IngestScope | None,
        lookups: _Lookups,
        refusals: _Refusals,
    ) -> Event | None:
        """The event of one item, or None when it is refused (the refusal goes to ``refusals``)."""
        label_cloud = scope.cloud if scope is not None else "unknown"
        rejected, audits = refusals.rejected, refusals.audits

        problem = _json_problem(item)
        if problem is not None:
            _refuse(refusals, index, item, problem, label_cloud)
            return None
        try:
            event = parse_event(item, source=source)
        except EventInvalid as exc:
            _refuse(refusals, index, item, exc.reason, label_cloud)
            return None
        if scope is not None and (event.platform, event.cloud) != (scope.platform, scope.cloud):
            rejected.append(EventRejection(index, event.event_id, "scope"))
            audits.append(
                AuditEntry(
                    actor=scope.actor,
                    action=SCOPE_VIOLATION,
                    object_type="event",
                    object_id=event.event_id,
                    details={
                        "index": index,
                        "platform": event.platform,
                        "cloud": event.cloud,
                        "scope": {"platform": scope.platform, "cloud": scope.cloud},
                    },
                )
            )
            metrics.EVENTS_REJECTED.labels(cloud=scope.cloud, reason="scope").inc()
            log.warning(
                "ingest scope violation event_id=%s platform=%s cloud=%s scope_platform=%s scope_cloud=%s",
                event.event_id,
                event.platform,
                event.cloud,
                scope.platform,
                scope.cloud,
            )
            return None
        if event.size is not None:
            event = name_event_size(event, lookups.names[event.cloud])
            validator = lookups.validators[(event.platform, event.resource_type)]
            size = event.size or {}
            if validator is None:
                if self._require_size_schema:
                    _refuse(
                        refusals,
                        index,
                        item,
                        f"size_schema: no size schema is registered for ({event.platform}, "
                        f"{event.resource_type})",
                        event.cloud,
                    )
                    return None
                platform, resource_type = self._types.labels(event.platform, event.resource_type)
                metrics.UNVALIDATED_SIZE.labels(platform=platform, resource_type=resource_type).inc()
            else:
                error = self._schemas.check(validator, size)
                if error is not None:
                    _refuse(refusals, index, item, f"size_schema: {error}", event.cloud)
                    return None
        return event
