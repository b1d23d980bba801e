"""The gate a paced run puts between the collector and the store: nothing dated after the instant of
the sync about to run reaches the store before that sync has read it.

A paced run keeps publishing while a sync runs, and at factor 744 the wall second a sync takes is
twelve minutes of the month. A sync reads the cloud first and the projection rows after; an event
dated after the sync's instant that reaches the store in between is a row the listing cannot explain
(an instance created after the instant is a live row the listing did not name, an update after it a
row that disagrees with the listing). Seed 002 turns the settle window off for the told loop, and
with it the rule that would defer those corrections, so the run would book a delete for an instance
that exists or undo an update. A delivery holding such an event waits until the sync has run, as the
outbox waits for a store that is not taking rows; everything dated up to the instant passes, so the
gate adds no lag to what the sync is meant to find delivered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

import anyio

from tally.core import parse_instant


class Ingests(Protocol):
    async def ingest(self, items: Sequence[object], *, source: str = ..., scope: Any = None) -> Any: ...


def newest_instant(items: Sequence[object]) -> datetime | None:
    """The newest ``timestamp`` of a delivery's events; None when none carries a readable one (the
    pipeline refuses those, the gate has nothing to hold them for)."""
    newest: datetime | None = None
    for item in items:
        text = item.get("timestamp") if isinstance(item, Mapping) else None
        if not isinstance(text, str):
            continue
        try:
            instant = parse_instant(text)
        except ValueError:
            continue
        if newest is None or instant > newest:
            newest = instant
    return newest


class IngestGate:
    """``pipeline`` for the collector's deliveries; a delivery with an event dated after the limit
    waits until the limit moves past it or the gate opens."""

    def __init__(self, pipeline: Ingests) -> None:
        self._pipeline = pipeline
        self._limit: datetime | None = None
        self._moved = anyio.Event()

    @property
    def limit(self) -> datetime | None:
        return self._limit

    def hold_after(self, instant: datetime | None) -> None:
        """Hold every delivery with an event dated after ``instant`` (None: hold nothing)."""
        self._limit = instant
        moved, self._moved = self._moved, anyio.Event()
        moved.set()

    async def ingest(self, items: Sequence[object], *, source: str = "collector", scope: Any = None) -> Any:
        newest = newest_instant(items)
        while self._limit is not None and newest is not None and newest > self._limit:
            await self._moved.wait()
        return await self._pipeline.ingest(items, source=source, scope=scope)
