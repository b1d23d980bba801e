"""The credentials part of the shared SQL: API tokens, ingest credentials, their audit rows, shared secrets.

A role of the store over the dialect seam (see ``_sql_dialect``); its audit rows are written as
the audit role writes them. Secrets are never stored, only their sha256 (``hash_secret``); a lookup
by hash answers only a secret that is neither revoked nor expired at the instant asked, so a
revoke or an expiry takes effect on the very next request. A listing read for
a token (``readable_by``) asks the same in its own statement (``USABLE_TOKEN_SQL``).
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from tally.core import format_instant, utc_now

from ._ids import is_uuid
from ._interface import ApiToken, AuditEntry, Conflict, IngestCredential, RuleViolation, TokenRole
from ._sql_audit import AuditSql
from ._sql_dialect import USABLE, SqlDialect

SHARED_SECRET_BYTES = 32
_CREDENTIAL_SELECT = "id, platform, cloud, description, created_at, revoked_at, expires_at"
_TOKEN_SELECT = "id, role, project_ids, description, created_at, revoked_at, expires_at"


class CredentialsSql:
    """Store methods of tokens, credentials and shared secrets; see the module docstring."""

    def __init__(self, sql: SqlDialect, audit: AuditSql) -> None:
        # The seam's operations its statements call, bound once (no lookup through ``sql`` per call).
        self._fetch = sql.fetch
        self._tx = sql.tx
        self.from_id_list = sql.from_id_list
        self.from_opt_ts = sql.from_opt_ts
        self.from_ts = sql.from_ts
        self.id_list = sql.id_list
        self.integrity_errors = sql.integrity_errors
        self.opt_ts = sql.opt_ts
        self.ts = sql.ts
        self._write_audits = audit.write_audits

    def _credential(self, rec: Sequence[Any]) -> IngestCredential:
        return IngestCredential(
            str(rec[0]),
            rec[1],
            rec[2],
            rec[3],
            self.from_ts(rec[4]),
            self.from_opt_ts(rec[5]),
            self.from_opt_ts(rec[6]),
        )

    def _token(self, rec: Sequence[Any]) -> ApiToken:
        return ApiToken(
            str(rec[0]),
            rec[1],
            self.from_id_list(rec[2]),
            rec[3],
            self.from_ts(rec[4]),
            self.from_opt_ts(rec[5]),
            self.from_opt_ts(rec[6]),
        )

    async def create_ingest_credential(
        self,
        *,
        platform: str,
        cloud: str,
        token_hash: str,
        description: str | None = None,
        expires_at: datetime | None = None,
        actor: str | None = None,
    ) -> IngestCredential:
        cred_id = str(uuid.uuid4())
        now = utc_now()
        try:
            async with self._tx() as tx:
                await tx.execute(
                    "INSERT INTO ingest_credentials "
                    "(id, platform, cloud, token_hash, description, created_at, expires_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        cred_id,
                        platform,
                        cloud,
                        token_hash,
                        description,
                        self.ts(now),
                        self.opt_ts(expires_at),
                    ),
                )
                if actor is not None:
                    details = {"platform": platform, "cloud": cloud, "expires_at": _stamp(expires_at)}
                    entry = AuditEntry(
                        actor, "ingest_credential.create", "ingest_credential", cred_id, details
                    )
                    await self._write_audits(tx, [entry], now)
        except self.integrity_errors() as exc:
            raise Conflict("an ingest credential with this token hash exists") from exc
        return IngestCredential(cred_id, platform, cloud, description, now, None, expires_at)

    async def ingest_credential_by_hash(
        self, token_hash: str, *, at: datetime | None = None
    ) -> IngestCredential | None:
        recs = await self._fetch(
            f"SELECT {_CREDENTIAL_SELECT} FROM ingest_credentials WHERE token_hash = ? AND {USABLE}",
            (token_hash, self.ts(at or utc_now())),
        )
        return self._credential(recs[0]) if recs else None

    async def list_ingest_credentials(self) -> list[IngestCredential]:
        recs = await self._fetch(
            f"SELECT {_CREDENTIAL_SELECT} FROM ingest_credentials ORDER BY created_at, id"
        )
        return [self._credential(r) for r in recs]

    async def revoke_ingest_credential(self, credential_id: str, *, actor: str | None = None) -> bool:
        return await self._revoke("ingest_credentials", "ingest_credential", credential_id, actor)

    async def create_api_token(
        self,
        *,
        token_hash: str,
        role: TokenRole,
        project_ids: Sequence[str] = (),
        description: str | None = None,
        expires_at: datetime | None = None,
        actor: str | None = None,
    ) -> ApiToken:
        if role not in ("admin", "read_all", "project"):
            raise RuleViolation(f"api token role {role!r} is not one of admin, read_all, project")
        if role == "project" and not project_ids:
            raise RuleViolation("an api token of role project needs at least one project id")
        for pid in project_ids:
            if not is_uuid(pid):
                raise RuleViolation(f"project id {pid!r} of the api token is not a UUID")
        token_id = str(uuid.uuid4())
        now = utc_now()
        try:
            async with self._tx() as tx:
                await tx.execute(
                    "INSERT INTO api_tokens "
                    "(id, token_hash, role, project_ids, description, created_at, expires_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        token_id,
                        token_hash,
                        role,
                        self.id_list(project_ids),
                        description,
                        self.ts(now),
                        self.opt_ts(expires_at),
                    ),
                )
                if actor is not None:
                    details = {
                        "role": role,
                        "project_ids": list(project_ids),
                        "expires_at": _stamp(expires_at),
                    }
                    entry = AuditEntry(actor, "api_token.create", "api_token", token_id, details)
                    await self._write_audits(tx, [entry], now)
        except self.integrity_errors() as exc:
            raise Conflict("an api token with this token hash exists") from exc
        return ApiToken(token_id, role, tuple(project_ids), description, now, None, expires_at)

    async def api_token_by_hash(self, token_hash: str, *, at: datetime | None = None) -> ApiToken | None:
        recs = await self._fetch(
            f"SELECT {_TOKEN_SELECT} FROM api_tokens WHERE token_hash = ? AND {USABLE}",
            (token_hash, self.ts(at or utc_now())),
        )
        return self._token(recs[0]) if recs else None

    async def list_api_tokens(self) -> list[ApiToken]:
        recs = await self._fetch(f"SELECT {_TOKEN_SELECT} FROM api_tokens ORDER BY created_at, id")
        return [self._token(r) for r in recs]

    async def revoke_api_token(self, token_id: str, *, actor: str | None = None) -> bool:
        return await self._revoke("api_tokens", "api_token", token_id, actor)

    async def _revoke(self, table: str, object_type: str, object_id: str, actor: str | None) -> bool:
        if not is_uuid(object_id):
            return False
        now = utc_now()
        async with self._tx() as tx:
            count = await tx.execute(
                f"UPDATE {table} SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (self.ts(now), object_id),
            )
            if count and actor is not None:
                entry = AuditEntry(actor, f"{object_type}.revoke", object_type, object_id)
                await self._write_audits(tx, [entry], now)
        return count > 0

    async def shared_secret(self, name: str) -> bytes:
        recs = await self._fetch("SELECT secret FROM shared_secrets WHERE name = ?", (name,))
        if not recs:
            # Two first uses at once both insert; the primary key keeps the first, and both read it back.
            async with self._tx() as tx:
                await tx.execute(
                    "INSERT INTO shared_secrets (name, secret, created_at) VALUES (?, ?, ?) "
                    "ON CONFLICT (name) DO NOTHING",
                    (name, secrets.token_hex(SHARED_SECRET_BYTES), self.ts(utc_now())),
                )
                recs = await tx.fetchall("SELECT secret FROM shared_secrets WHERE name = ?", (name,))
        return bytes.fromhex(str(recs[0][0]))


def _stamp(value: datetime | None) -> str | None:
    return None if value is None else format_instant(value)
