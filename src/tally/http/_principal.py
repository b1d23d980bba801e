"""Who a request was made by (``Principal``), and the API tokens an API process remembers.

``KnownTokens`` keeps, by hash, what a read_all or admin token cannot change (its id and role) once
the store has found it usable, so that the lean lane's listings need no round trip of their own to
learn the caller: they read as the token (``readable_by``), and the store checks in the page's own
statement that the token is still usable. The lookup's own round trip was a sixth of a page's server
CPU (docs/benchmarks.md, "reads"). 1,024 tokens at most, the oldest dropped first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from tally.ingest import IngestScope
from tally.store import Project

Kind = Literal["internal", "ingest", "api", "open", "keystone"]


@dataclass(frozen=True, slots=True)
class CloudView:
    """What a keystone token may read: the rows of ``cloud``, of the projects (keystone ids) in
    ``projects``, or of every project of the cloud when ``projects`` is None."""

    cloud: str
    projects: frozenset[str] | None


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller.

    Invariant: ``projects`` is None for every caller but an api token of role
    ``project``, whose resources are limited to those (cloud, external_id) pairs; ``view`` is None
    for every caller but a keystone token, whose reads are limited to it.
    """

    kind: Kind
    actor: str
    role: str | None = None
    scope: IngestScope | None = None  # what an ingest credential may write
    project_ids: frozenset[str] = frozenset()
    projects: tuple[Project, ...] | None = None
    # The token's hash when this principal was recalled (``KnownTokens``) instead of looked up: the
    # handler must read as the token (the filters' ``readable_by``), which checks it in the same statement.
    recalled: str | None = None
    view: CloudView | None = None

    @property
    def restricted(self) -> bool:
        return self.projects is not None or self.view is not None

    def owns(self, cloud: str, project_external_id: str) -> bool:
        if self.view is not None:
            seen = self.view.projects
            return cloud == self.view.cloud and (seen is None or project_external_id in seen)
        if self.projects is None:
            return True
        return any(p.cloud == cloud and p.external_id == project_external_id for p in self.projects)


class KnownTokens:
    """Principals of read_all and admin API tokens found usable, by hash; the oldest go past ``size``.

    Only what a token cannot change is kept (its id and role); whether it is still usable is asked
    of every read made for it. Project tokens are not kept: their projects are looked up each time."""

    def __init__(self, size: int = 1024) -> None:
        self._size = size
        self._known: dict[str, Principal] = {}

    def recall(self, token_hash: str) -> Principal | None:
        return self._known.get(token_hash)

    def remember(self, token_hash: str, principal: Principal) -> None:
        if token_hash not in self._known and len(self._known) >= self._size:
            del self._known[next(iter(self._known))]
        self._known[token_hash] = replace(principal, recalled=token_hash)

    def forget(self, token_hash: str) -> None:
        self._known.pop(token_hash, None)
