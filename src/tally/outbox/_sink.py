"""Where the sender delivers a batch: the Reporting API over HTTP, or this daemon's ingest pipeline.

A sink answers each batch with a ``DeliveryResult``. The sender's rules hang
on the status alone: ``ACCEPTED`` deletes the rows (items the API refused are
counted, never retried: they are dead-lettered there), ``TOO_LARGE`` halves
the batch, ``RETRY`` keeps the rows and backs off (a ``server_error`` RETRY
repeated on one batch makes the sender look for the one item at fault). A sink never raises for a
delivery problem; a raised exception is a bug and the sender treats it as
``RETRY`` so that nothing committed is lost.
"""

from __future__ import annotations

import enum
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx
import orjson

log = logging.getLogger(__name__)


class SinkConfigError(ValueError):
    """A sink that cannot be used as configured (for example plain http without the opt-in)."""


class DeliveryStatus(enum.Enum):
    ACCEPTED = "accepted"  # the sink took the batch; refused items were dead-lettered there
    TOO_LARGE = "too_large"  # 413: the same rows again, in smaller batches
    RETRY = "retry"  # the sink is down or failing: keep the rows, back off


@dataclass(frozen=True, slots=True)
class Refusal:
    index: int
    event_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class DeliveryResult:
    status: DeliveryStatus
    accepted: int = 0
    duplicates: int = 0
    refused: tuple[Refusal, ...] = field(default=())
    # For RETRY: "http_status", "network" or "sink_error", and a detail for the log line.
    reason: str = ""
    detail: str = ""
    # For RETRY: the sink itself failed on this batch (a 5xx, or the in-process store raised), so one
    # of its items may be what it cannot take; the sender narrows the batch to find it.
    server_error: bool = False


class EventSink(Protocol):
    """One narrow seam: hand over a batch of canonical events (wire dicts) and say what happened."""

    async def deliver(self, items: list[dict[str, Any]]) -> DeliveryResult: ...


def _dumps(items: list[dict[str, Any]]) -> bytes:
    try:
        return orjson.dumps(items)
    except (TypeError, orjson.JSONEncodeError):
        # Integers beyond 64 bits: the standard library writes them as they are.
        return json.dumps(items, separators=(",", ":")).encode()


def _refusals(rejected: object) -> tuple[Refusal, ...]:
    if not isinstance(rejected, Sequence):
        return ()
    found = []
    for entry in rejected:
        if isinstance(entry, dict):
            found.append(
                Refusal(
                    int(entry.get("index", -1)), str(entry.get("event_id", "")), str(entry.get("reason", ""))
                )
            )
    return tuple(found)


class HttpSink:
    """POST /api/v1/events on a Reporting API, with the collector's ingest token."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        insecure: bool = False,
        timeout_s: float = 30.0,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        scheme = urlsplit(base_url).scheme
        if scheme not in ("http", "https"):
            raise SinkConfigError(f"TALLY_OSC_REPORTING_URL {base_url!r} is not an http(s) URL")
        if scheme == "http" and not insecure:
            raise SinkConfigError(
                f"TALLY_OSC_REPORTING_URL {base_url!r} is plain http; use https "
                "or set TALLY_OSC_REPORTING_INSECURE=true"
            )
        self.url = base_url.rstrip("/") + "/api/v1/events"
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._client = client or httpx.AsyncClient(timeout=timeout_s)
        self._headers = headers

    async def aclose(self) -> None:
        await self._client.aclose()

    async def deliver(self, items: list[dict[str, Any]]) -> DeliveryResult:
        try:
            response = await self._client.post(self.url, content=_dumps(items), headers=self._headers)
        except httpx.HTTPError as exc:
            return DeliveryResult(
                DeliveryStatus.RETRY, reason="network", detail=f"{type(exc).__name__}: {exc}"
            )
        if response.status_code == 413:
            return DeliveryResult(DeliveryStatus.TOO_LARGE, reason="too_large")
        if response.status_code != 200:
            # 5xx is the API's trouble, 401/403 a token an operator must fix: either way the rows wait.
            return DeliveryResult(
                DeliveryStatus.RETRY,
                reason="http_status",
                detail=f"status={response.status_code} body={response.text[:200]!r}",
                server_error=response.status_code >= 500,
            )
        try:
            answer = response.json()
        except ValueError:
            return DeliveryResult(
                DeliveryStatus.RETRY, reason="http_status", detail="200 with a non-JSON body"
            )
        if not isinstance(answer, dict):
            return DeliveryResult(
                DeliveryStatus.RETRY, reason="http_status", detail="200 with a non-object body"
            )
        return DeliveryResult(
            DeliveryStatus.ACCEPTED,
            accepted=int(answer.get("accepted", 0)),
            duplicates=int(answer.get("duplicates", 0)),
            refused=_refusals(answer.get("rejected", [])),
        )


class IngestSink:
    """This daemon's own ingest pipeline: ``IngestPipeline.ingest(items, source="collector")``.

    ``tally.ingest`` is imported when the first batch arrives, so a collector
    that posts over HTTP never loads the store's code.
    """

    def __init__(self, pipeline: Any) -> None:
        self._pipeline = pipeline

    async def deliver(self, items: list[dict[str, Any]]) -> DeliveryResult:
        from tally.ingest import BatchTooLarge

        try:
            result = await self._pipeline.ingest(items, source="collector")
        except BatchTooLarge:
            return DeliveryResult(DeliveryStatus.TOO_LARGE, reason="too_large")
        except Exception as exc:
            # The store being down is the in-process twin of a 5xx: the rows wait for it.
            return DeliveryResult(
                DeliveryStatus.RETRY,
                reason="sink_error",
                detail=f"{type(exc).__name__}: {exc}",
                server_error=True,
            )
        refused = tuple(
            Refusal(int(r.index), str(r.event_id or ""), str(r.reason))
            for r in getattr(result, "rejected", ())
        )
        return DeliveryResult(
            DeliveryStatus.ACCEPTED,
            accepted=int(result.accepted),
            duplicates=int(result.duplicates),
            refused=refused,
        )
