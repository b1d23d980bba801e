"""The collector's sink, chosen once: a Reporting API over HTTP when ``TALLY_OSC_REPORTING_URL`` names
one, else this process's own ingest pipeline."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from tally.config import Settings

from ._parts import ingest_sink

if TYPE_CHECKING:
    from tally.ingest import IngestPipeline
    from tally.outbox import EventSink


def http_sink_problem(settings: Settings) -> str | None:
    """Why the HTTP sink the settings name cannot be used, or None; checked before anything starts."""
    if not settings.osc_reporting_url:
        return None
    from tally.outbox import HttpSink, SinkConfigError

    try:
        HttpSink(settings.osc_reporting_url, None, insecure=settings.osc_reporting_insecure)
    except SinkConfigError as exc:
        return str(exc)
    return None


@asynccontextmanager
async def open_sink(settings: Settings, pipeline: Callable[[], IngestPipeline]) -> AsyncIterator[EventSink]:
    """The HTTP sink (closed on the way out), else the in-process one over ``pipeline()``: called only
    then, so a collector posting over HTTP needs no store."""
    if not settings.osc_reporting_url:
        yield ingest_sink(pipeline())
        return
    from tally.outbox import HttpSink

    # HttpSink sends no token for an empty one, as for none.
    token = settings.osc_token.get_secret_value() if settings.osc_token is not None else None
    sink = HttpSink(settings.osc_reporting_url, token, insecure=settings.osc_reporting_insecure)
    try:
        yield sink
    finally:
        await sink.aclose()
