"""The adapter seam: the platform half of a sync, and the registry that picks one by name.

An adapter answers two questions about one cloud: what it holds now
(``observe``) and what its size ids are called (``list_size_names``). It reports
facts and evidence; the framework's rules decide. Precedence of what an adapter
may do with a failure:

1. A failure that says nothing about one resource type (its settings, its
   credentials, the admin-scope probe) raises ``RunAborted``: no type is observed.
2. A failure of one type's listing is reported in ``Observation.errors`` and marks
   the type incomplete; the run goes on with the others.
3. A failure of the size-name listing raises ``SizeNamesFailed``; no type loses
   completeness.

Adapters are named in the clouds config and imported lazily, so a deployment
that reconciles nothing never imports a platform's client libraries.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from tally.config import CloudEntry

from ._model import Observation, SizeNameEntry

ADAPTERS: dict[str, str] = {"openstack": "tally.openstack:OpenStackAdapter"}


@dataclass(slots=True)
class Progress:
    """Which listings are in flight, so a run cut off by its budget can say what it was doing.

    Invariant: ``_active`` keeps start order; the first entry is the one reported.
    """

    phase: str = "starting"
    _active: list[str] = field(default_factory=list)

    def begin(self, listing: str) -> None:
        self._active.append(listing)

    def end(self, listing: str) -> None:
        if listing in self._active:
            self._active.remove(listing)

    def current(self) -> str:
        if self._active:
            return f"enumerating {self._active[0]}"
        return self.phase


@dataclass(frozen=True, slots=True)
class ObserveRequest:
    """What the framework tells an adapter about the run it serves."""

    cloud: str
    poll_at: datetime
    # Where nova's deleted-servers listing opens; None = none this run (a cloud's first run).
    deleted_since: datetime | None
    progress: Progress


class Adapter(Protocol):
    async def observe(self, request: ObserveRequest) -> Observation:
        """List what the cloud holds; raise ``RunAborted`` when it cannot be observed at all."""
        ...

    async def list_size_names(self, progress: Progress) -> list[SizeNameEntry]:
        """List the size names (cinder volume types, private ones too); raise ``SizeNamesFailed``."""
        ...


def adapter_class(name: str) -> Callable[[CloudEntry], Adapter]:
    """The adapter class registered under ``name``; raises ``KeyError`` for an unknown one."""
    module_name, _, attr = ADAPTERS[name].partition(":")
    factory: Callable[[CloudEntry], Adapter] = getattr(importlib.import_module(module_name), attr)
    return factory


def validate_adapter_config(entry: CloudEntry) -> str | None:
    """The reason ``entry.adapter_config`` is unusable, or None; for the startup check."""
    cls = adapter_class(entry.adapter)
    check: Callable[[CloudEntry], str | None] = getattr(cls, "validate_config")  # noqa: B009
    return check(entry)
