"""The records of secrets, API tokens and ingest credentials, and what one of them is at an instant.

Only the record is kept, never the secret (the store holds its sha256). A
record answers for its secret until it is revoked or, when it has an expiry,
until that instant, whichever comes first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

TokenRole = Literal["admin", "read_all", "project"]
CredentialStatus = Literal["active", "expired", "revoked"]


def credential_status(
    revoked_at: datetime | None, expires_at: datetime | None, at: datetime
) -> CredentialStatus:
    """What a secret is at ``at``: a revoke wins over an expiry; a secret expires at ``expires_at`` itself."""
    if revoked_at is not None and revoked_at <= at:
        return "revoked"
    if expires_at is not None and expires_at <= at:
        return "expired"
    return "active"


@dataclass(frozen=True, slots=True)
class IngestCredential:
    id: str
    platform: str
    cloud: str
    description: str | None
    created_at: datetime
    revoked_at: datetime | None
    expires_at: datetime | None = None

    def status(self, at: datetime) -> CredentialStatus:
        return credential_status(self.revoked_at, self.expires_at, at)


@dataclass(frozen=True, slots=True)
class ApiToken:
    id: str
    role: TokenRole
    project_ids: tuple[str, ...]
    description: str | None
    created_at: datetime
    revoked_at: datetime | None
    expires_at: datetime | None = None

    def status(self, at: datetime) -> CredentialStatus:
        return credential_status(self.revoked_at, self.expires_at, at)
