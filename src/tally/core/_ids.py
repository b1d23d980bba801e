"""Event ids that are the same whoever computes them, so a retry deduplicates."""

from __future__ import annotations

import hashlib
from datetime import datetime

from ._time import format_instant


def deterministic_event_id(platform: str, cloud: str, resource_id: str, event_type: str, at: datetime) -> str:
    """The id of an event whose provider gave none: the facts it states, hashed."""
    text = f"{cloud}:{resource_id}:{event_type}:{format_instant(at)}"
    return f"{platform}-{hashlib.sha256(text.encode()).hexdigest()}"


def synthetic_event_id(sync_run_id: str, cloud: str, resource_type: str, resource_id: str, kind: str) -> str:
    """The id of a correction: one per (run, resource, kind), so a retried booking is a duplicate."""
    text = f"{sync_run_id}:{cloud}:{resource_type}:{resource_id}:{kind}"
    return "recon-" + hashlib.sha256(text.encode()).hexdigest()
