"""Booking: corrections become synthetic events and go through the ordinary ingest pipeline.

A correction lands exactly like a collector event (validation, size names,
size schema, dedup, fold), only with ``source="reconciliation"``. Its id is the
synthetic id of (run, resource, kind), so a retried booking is a duplicate, and
``payload.provider`` says why the run booked it and which run that was.

Two batches are in flight at once: while the store writes and commits one (on PostgreSQL, the
server's work on its own core), the next is built and validated here. A batch that names a resource
of a batch still in flight waits for that one to end, so a resource's corrections are still
committed in the run's order; the answers are read in batch order whatever order they came in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio

from tally.core import format_instant, synthetic_event_id

from ._model import Correction, Kind, Reason

BATCH_SIZE = 250
# Batches booked at once: one being written by the store while the next is built. Each holds a
# connection of the pool while it is in flight.
IN_FLIGHT = 2
# Each kind's and reason's texts read once: an enum member's ``.value`` is a descriptor call, and a first
# sync reads them for every one of its creates.
_KIND_TEXT = {kind: kind.value for kind in Kind}
_EVENT_TYPE = {kind: f"sync.{kind.value}" for kind in Kind}
_REASON_TEXT = {reason: reason.value for reason in Reason}


class IngestsEvents(Protocol):
    """The one entry point of ``tally.ingest.IngestPipeline`` the run uses."""

    async def ingest(self, items: Sequence[object], *, source: str = ..., scope: Any = ...) -> Any: ...


def provider_of(correction: Correction, sync_run_id: str) -> dict[str, Any]:
    """The explanation a correction carries in ``payload.provider``."""
    provider: dict[str, Any] = {"reason": _REASON_TEXT[correction.reason], "sync_run_id": sync_run_id}
    if correction.changes:
        provider["changes"] = {k: dict(v) for k, v in correction.changes.items()}
    if correction.requested_at is not None:
        # The instant the rule asked for, when the row's newest event forced a later one.
        provider["dated_past_newest_event"] = {"requested": format_instant(correction.requested_at)}
    return provider


def event_of(correction: Correction, *, sync_run_id: str, cloud: str, platform: str) -> dict[str, Any]:
    """The wire object of one correction."""
    kind = correction.kind
    payload: dict[str, Any] = {}
    if kind is not Kind.DELETE:
        payload["state"] = correction.state
        if correction.size is not None:
            payload["size"] = dict(correction.size)
    payload["provider"] = provider_of(correction, sync_run_id)
    return {
        "event_id": synthetic_event_id(
            sync_run_id, cloud, correction.resource_type, correction.resource_id, _KIND_TEXT[kind]
        ),
        "timestamp": format_instant(correction.timestamp),
        "event_type": _EVENT_TYPE[kind],
        "platform": platform,
        "cloud": cloud,
        "resource_type": correction.resource_type,
        "resource_id": correction.resource_id,
        "project_id": correction.project_id,
        "source": "reconciliation",
        "payload": payload,
    }


@dataclass(slots=True)
class BookingResult:
    """Per kind, the corrections the store took (new or already there), and the refusals."""

    booked: dict[Kind, int]
    errors: list[str]


@dataclass(slots=True)
class _InFlight:
    """One batch sent to the pipeline: its resources, its answer (or the exception it raised), its end."""

    keys: frozenset[tuple[str, str]]
    done: anyio.Event
    answer: Any = None
    failure: Exception | None = None


async def book(
    pipeline: IngestsEvents,
    corrections: Sequence[Correction],
    *,
    sync_run_id: str,
    cloud: str,
    platform: str,
) -> BookingResult:
    """Ingest the corrections in batches of ``BATCH_SIZE``, ``IN_FLIGHT`` at once; a refused one
    becomes an error naming its resource. A batch that raised ends the booking with its exception once
    the batches in flight beside it ended (what they booked stays booked, as that of the batches
    before it)."""
    batches = [corrections[start : start + BATCH_SIZE] for start in range(0, len(corrections), BATCH_SIZE)]
    sent: list[_InFlight] = []
    slots = anyio.Semaphore(IN_FLIGHT)
    failed = anyio.Event()

    async def send(batch: Sequence[Correction], flight: _InFlight) -> None:
        try:
            items = [event_of(c, sync_run_id=sync_run_id, cloud=cloud, platform=platform) for c in batch]
            flight.answer = await pipeline.ingest(items, source="reconciliation")
        except Exception as exc:  # raised again, unwrapped, once the other batch in flight ended
            flight.failure = exc
            failed.set()
        finally:
            flight.done.set()
            slots.release()

    async with anyio.create_task_group() as tg:
        pending: list[_InFlight] = []
        for batch in batches:
            await slots.acquire()
            keys = frozenset((c.resource_type, c.resource_id) for c in batch)
            pending = [f for f in pending if not f.done.is_set()]
            for earlier in pending:
                if not keys.isdisjoint(earlier.keys):
                    await earlier.done.wait()
            if failed.is_set():
                slots.release()
                break
            flight = _InFlight(keys, anyio.Event())
            sent.append(flight)
            pending.append(flight)
            tg.start_soon(send, batch, flight)
    return _tally(batches, sent)


def _tally(batches: Sequence[Sequence[Correction]], sent: Sequence[_InFlight]) -> BookingResult:
    """The answers in batch order; the first batch that raised raises here."""
    result = BookingResult({k: 0 for k in Kind}, [])
    for batch, flight in zip(batches, sent, strict=False):
        if flight.failure is not None:
            raise flight.failure
        refused: set[int] = set()
        for rejection in flight.answer.rejected:
            refused.add(rejection.index)
            c = batch[rejection.index]
            result.errors.append(f"booking {c.resource_type} {c.resource_id}: {rejection.reason}")
        for index, c in enumerate(batch):
            if index not in refused:
                result.booked[c.kind] += 1
    return result
