"""Validating a caller's keystone token as keystonemiddleware does: ``GET /v3/auth/tokens``.

The request carries the service credential's own token (``X-Auth-Token``, from the clouds.yaml entry
through keystoneauth1, renewed by it when it expires) and the token to check (``X-Subject-Token``).
Keystone answers 200 with the token document (its user, scope and roles, implied roles included, and
``expires_at``) or 404 for a token it does not know, has revoked, or let expire; a token of another
keystone is unknown here. Anything else (no answer within the timeout, a 5xx, the service credential
refused) is ``KeystoneUnavailable``: the caller answers 503, never a pass.

keystoneauth1 blocks (requests): each call runs in a worker thread under a deadline; a call past it is
abandoned, and the answer is ``KeystoneUnavailable``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

import anyio
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1.session import Session

from ._clouds_yaml import ResolvedCloud

IDENTITY_V3: Mapping[str, Any] = {"service_type": "identity", "version": (3, 0)}


class KeystoneUnavailable(Exception):
    """Keystone did not give a usable answer; the text says what happened, never a token."""


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """What a valid token says of its holder. Invariant: at most one of project_id, domain_id, system."""

    user_id: str
    roles: frozenset[str]
    expires_at: datetime
    project_id: str | None = None
    project_domain_id: str | None = None
    domain_id: str | None = None
    system: bool = False


def _instant(text: object) -> datetime:
    if not isinstance(text, str):
        raise KeystoneUnavailable("keystone's token document has no expires_at")
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def token_info(document: object) -> TokenInfo:
    """The ``TokenInfo`` of a ``GET /v3/auth/tokens`` answer's body."""
    token = document.get("token") if isinstance(document, dict) else None
    if not isinstance(token, dict):
        raise KeystoneUnavailable("keystone's answer holds no token document")
    user = token.get("user") or {}
    project = token.get("project") if isinstance(token.get("project"), dict) else None
    domain = token.get("domain") if isinstance(token.get("domain"), dict) else None
    roles = frozenset(str(r.get("name")) for r in token.get("roles") or () if isinstance(r, dict))
    return TokenInfo(
        user_id=str(user.get("id", "")),
        roles=roles,
        expires_at=_instant(token.get("expires_at")),
        project_id=str(project["id"]) if project else None,
        project_domain_id=str((project.get("domain") or {}).get("id")) if project else None,
        domain_id=str(domain["id"]) if domain else None,
        system=bool(token.get("system")),
    )


class TokenChecker:
    """Asks one cloud's keystone about tokens, with the service credential of ``cloud``."""

    def __init__(self, cloud: ResolvedCloud, *, timeout_s: float) -> None:
        self._cloud = cloud
        self._timeout_s = timeout_s
        self._session: Session | None = None
        self._interface = cloud.region.get_interface("identity") or "public"

    def _session_blocking(self) -> Session:
        if self._session is None:
            self._session = self._cloud.region.get_session()
        return self._session

    def _get_blocking(self, path: str, headers: Mapping[str, str]) -> Any:
        try:
            session = self._session_blocking()
            response = session.get(
                path,
                endpoint_filter={**IDENTITY_V3, "interface": self._interface},
                headers=dict(headers),
                raise_exc=False,
                timeout=self._timeout_s,
                # keystone's 404 repeats the token ("Could not find token: <id>"): never in a log line.
                log=False,
            )
        except ks_exceptions.ClientException as exc:
            # Connection refused, a timeout, the service credential refused while authenticating.
            raise KeystoneUnavailable(f"keystone of {self._cloud.entry!r}: {type(exc).__name__}") from None
        return response

    def _check_blocking(self, subject: str) -> TokenInfo | None:
        response = self._get_blocking("/auth/tokens?nocatalog", {"X-Subject-Token": subject})
        if response.status_code == 404:
            return None
        if response.status_code == 401 and self._session is not None:
            # The service credential's own token was refused (revoked): a new one, once.
            self._session.invalidate()
            response = self._get_blocking("/auth/tokens?nocatalog", {"X-Subject-Token": subject})
            if response.status_code == 404:
                return None
        if response.status_code != 200:
            raise KeystoneUnavailable(
                f"keystone of {self._cloud.entry!r} answered {response.status_code} to a token check"
            )
        try:
            return token_info(response.json())
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            # Not keystone's document (a proxy's page, a truncated body): no answer, never a pass.
            raise KeystoneUnavailable(
                f"keystone of {self._cloud.entry!r} answered no token document ({type(exc).__name__})"
            ) from None

    def _domain_projects_blocking(self, domain_id: str) -> frozenset[str]:
        response = self._get_blocking(f"/projects?domain_id={quote(domain_id, safe='')}", {})
        if response.status_code != 200:
            raise KeystoneUnavailable(
                f"keystone of {self._cloud.entry!r} answered {response.status_code} to a project listing"
            )
        try:
            return frozenset(str(p["id"]) for p in response.json().get("projects") or ())
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise KeystoneUnavailable(
                f"keystone of {self._cloud.entry!r} answered no project list ({type(exc).__name__})"
            ) from None

    async def check(self, subject: str) -> TokenInfo | None:
        """The token's holder, or None when keystone does not know the token (unknown, revoked, expired)."""
        with anyio.fail_after(self._timeout_s + 1):
            return await anyio.to_thread.run_sync(self._check_blocking, subject, abandon_on_cancel=True)

    async def domain_projects(self, domain_id: str) -> frozenset[str]:
        """The ids of the projects of ``domain_id``."""
        with anyio.fail_after(self._timeout_s + 1):
            return await anyio.to_thread.run_sync(
                self._domain_projects_blocking, domain_id, abandon_on_cancel=True
            )
