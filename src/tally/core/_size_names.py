"""Size names: a size member's platform id replaced by the name the platform's catalog gives it.

Cinder's notifications carry a volume type by id and its listing by name; the price list keys volume
types by name. The same replacement serves the event that arrives once the name is known (ingest)
and the event stored before it was (every read of the record), so a volume is billed under its
type's name from its first second whichever came first. The value as reported stays in the payload,
under ``provider.size_as_reported``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ._event import Event

#: (resource_type, member, value) → name, for one cloud.
SizeNames = Mapping[tuple[str, str, str], str]


def named_size(resource_type: str, size: Any, names: SizeNames) -> Any:
    """``size`` with each member value the names know replaced by its name; ``size`` itself (the same
    object) when nothing is replaced, so a caller may cache by identity."""
    if not names or not isinstance(size, Mapping):
        return size
    replaced: dict[str, Any] | None = None
    for member, value in size.items():
        if isinstance(value, str):
            name = names.get((resource_type, member, value))
            if name is not None:
                if replaced is None:
                    replaced = dict(size)
                replaced[member] = name
    return size if replaced is None else replaced


def name_event_size(event: Event, names: SizeNames) -> Event:
    """``event`` with its size named (``named_size``) and the replaced values kept in
    ``provider.size_as_reported``; the event itself when nothing is replaced."""
    size = event.size
    if size is None:
        return event
    new_size = named_size(event.resource_type, size, names)
    if new_size is size:
        return event
    payload = dict(event.payload)
    provider = dict(payload.get("provider") or {})
    provider["size_as_reported"] = {m: v for m, v in size.items() if new_size[m] != v}
    payload["provider"] = provider
    payload["size"] = new_size
    return replace(event, payload=payload)
