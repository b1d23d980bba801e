"""What the Reporting API app is built from: the store, the ingest pipeline, settings, the sync runner,
the clouds taking keystone tokens."""

from __future__ import annotations

from dataclasses import dataclass, field

from tally.config import Settings
from tally.ingest import IngestPipeline
from tally.store import Store

from ._cursor import CursorKeyring
from ._keystone import KeystoneTokens
from ._principal import KnownTokens
from ._sync_runner import SyncRunner


@dataclass(frozen=True, slots=True)
class ReportingServices:
    """Invariant: ``pipeline`` writes to ``store``. ``sync_runner`` None = no cloud configured (sync 404)."""

    store: Store
    pipeline: IngestPipeline
    settings: Settings
    sync_runner: SyncRunner | None = None
    keystone: KeystoneTokens | None = None  # None: no cloud takes keystone tokens
    cursors: CursorKeyring = field(init=False, compare=False)
    known_tokens: KnownTokens = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "cursors", CursorKeyring(self.store))
        object.__setattr__(self, "known_tokens", KnownTokens())
