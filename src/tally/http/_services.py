"""What the Reporting API app is built from: the store, the ingest pipeline, settings, the sync runner,
the clouds taking keystone tokens."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from tally.config import Settings
from tally.ingest import IngestPipeline
from tally.store import (
    AuditRole,
    BillingRole,
    CatalogRole,
    CredentialsRole,
    EventsRole,
    PagesRole,
    ProjectionRole,
    ProjectsRole,
    SyncRecordsRole,
)

from ._cursor import CursorKeyring
from ._keystone import KeystoneTokens
from ._principal import KnownTokens
from ._sync_runner import SyncRunner


class ApiStore(
    EventsRole,
    ProjectionRole,
    PagesRole,
    CatalogRole,
    BillingRole,
    ProjectsRole,
    AuditRole,
    CredentialsRole,
    SyncRecordsRole,
    Protocol,
):
    """What the routes read and write of the store: every role but the schema's and the ingest's
    (events are written through ``pipeline`` only, and the API never migrates)."""


@dataclass(frozen=True, slots=True)
class ReportingServices:
    """Invariant: ``pipeline`` writes to ``store``. ``sync_runner`` None = no cloud configured (sync 404)."""

    store: ApiStore
    pipeline: IngestPipeline
    settings: Settings
    sync_runner: SyncRunner | None = None
    keystone: KeystoneTokens | None = None  # None: no cloud takes keystone tokens
    cursors: CursorKeyring = field(init=False, compare=False)
    known_tokens: KnownTokens = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "cursors", CursorKeyring(self.store))
        object.__setattr__(self, "known_tokens", KnownTokens())
