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
from collections.abc import Callable, Iterable
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
        return self.running()[0]

    def running(self) -> list[str]:
        """Every listing in flight, once each in start order ("enumerating image"), else the phase."""
        if self._active:
            return [f"enumerating {listing}" for listing in dict.fromkeys(self._active)]
        return [self.phase]


@dataclass(slots=True)
class AccountCheck:
    """What an adapter's account check (``tally check-cloud``) established and what it found wrong.

    An adapter class may define ``async check_account(entry) -> AccountCheck`` (a staticmethod)."""

    ok: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)


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


def check_adapter_environments(entries: Iterable[CloudEntry]) -> None:
    """Let each adapter the entries name check the process environment once, at startup.

    An adapter class may define ``check_environment()`` (a staticmethod that logs what it finds);
    the framework knows it by this name only, so it never imports a platform's package."""
    for name in sorted({e.adapter for e in entries}):
        check: Callable[[], object] | None = getattr(adapter_class(name), "check_environment", None)
        if check is not None:
            check()
