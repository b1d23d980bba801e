"""Booking: corrections become synthetic events and go through the ordinary ingest pipeline.

A correction lands exactly like a collector event (validation, size names,
size schema, dedup, fold), only with ``source="reconciliation"``. Its id is the
synthetic id of (run, resource, kind), so a retried booking is a duplicate, and
``payload.provider`` says why the run booked it and which run that was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tally.core import format_instant, synthetic_event_id

from ._model import Correction, Kind

BATCH_SIZE = 100


class IngestsEvents(Protocol):
    """The one entry point of ``tally.ingest.IngestPipeline`` the run uses."""

    async def ingest(self, items: Sequence[object], *, source: str = ..., scope: Any = ...) -> Any: ...


def provider_of(correction: Correction, sync_run_id: str) -> dict[str, Any]:
    """The explanation a correction carries in ``payload.provider``."""
    provider: dict[str, Any] = {"reason": correction.reason.value, "sync_run_id": sync_run_id}
    if correction.changes:
        provider["changes"] = {k: dict(v) for k, v in correction.changes.items()}
    if correction.requested_at is not None:
        # The instant the rule asked for, when the row's newest event forced a later one.
        provider["dated_past_newest_event"] = {"requested": format_instant(correction.requested_at)}
    return provider


def event_of(correction: Correction, *, sync_run_id: str, cloud: str, platform: str) -> dict[str, Any]:
    """The wire object of one correction."""
    payload: dict[str, Any] = {}
    if correction.kind is not Kind.DELETE:
        payload["state"] = correction.state
        if correction.size is not None:
            payload["size"] = dict(correction.size)
    payload["provider"] = provider_of(correction, sync_run_id)
    return {
        "event_id": synthetic_event_id(
            sync_run_id, cloud, correction.resource_type, correction.resource_id, correction.kind.value
        ),
        "timestamp": format_instant(correction.timestamp),
        "event_type": f"sync.{correction.kind.value}",
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


async def book(
    pipeline: IngestsEvents,
    corrections: Sequence[Correction],
    *,
    sync_run_id: str,
    cloud: str,
    platform: str,
) -> BookingResult:
    """Ingest the corrections in batches of 100; a refused one becomes an error naming its resource."""
    result = BookingResult({k: 0 for k in Kind}, [])
    for start in range(0, len(corrections), BATCH_SIZE):
        batch = corrections[start : start + BATCH_SIZE]
        items = [event_of(c, sync_run_id=sync_run_id, cloud=cloud, platform=platform) for c in batch]
        answer = await pipeline.ingest(items, source="reconciliation")
        refused: set[int] = set()
        for rejection in answer.rejected:
            refused.add(rejection.index)
            c = batch[rejection.index]
            result.errors.append(f"booking {c.resource_type} {c.resource_id}: {rejection.reason}")
        for index, c in enumerate(batch):
            if index not in refused:
                result.booked[c.kind] += 1
    return result
