"""The three outcomes of reading one notification, as values: nothing here raises.

Every body the collector takes ends in exactly one of them, and each one is
acknowledged: a ``Mapped`` event after it committed to the outbox, a
``Skipped`` or ``Unparseable`` body at once, counted by its reason, so that bad
input never blocks the queue.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class OsloNotification:
    """The members of an oslo notification the mapping reads.

    Invariant: ``timestamp`` is aware UTC; numbers inside ``payload`` that had a
    fraction or exponent are ``decimal.Decimal``, so no float rounding crept in.
    """

    message_id: str
    event_type: str
    timestamp: datetime
    payload: Any
    # The request context's project, when the payload names no owner (see ``_decode.context_owner``).
    context_owner: str


@dataclass(frozen=True, slots=True)
class Decoded:
    notification: OsloNotification


@dataclass(frozen=True, slots=True)
class Mapped:
    """A canonical event as the wire object ``POST /api/v1/events`` takes, and its JSON text (what
    the outbox stores; written once, when the mapping measured the event's size)."""

    event: dict[str, Any]
    oslo_event_type: str
    text: bytes

    @property
    def event_id(self) -> str:
        return str(self.event["event_id"])


@dataclass(frozen=True, slots=True)
class Skipped:
    """A readable notification that books nothing (unmapped type, versioned, source-host resize...)."""

    reason: str
    event_type: str
    message_id: str = ""


@dataclass(frozen=True, slots=True)
class Unparseable:
    """A body that could not be read; ``reason`` is a short fixed word, ``detail`` says what was wrong."""

    reason: str
    detail: str = field(default="")
    message_id: str = ""


DecodeOutcome = Decoded | Skipped | Unparseable
MapOutcome = Mapped | Skipped | Unparseable
