"""Who is calling: the internal token, ingest credentials and API tokens, from ``Authorization: Bearer``.

Secrets are never stored: the store holds the sha256 of each ingest credential
and API token and is asked for the hash on every request (nothing is cached),
so a revoked or expired secret is refused from the next request on. The internal token comes from the
settings and is compared in constant time. ``TALLY_REPORTING_AUTH_MODE=disabled``
lets every caller through as an admin with no ingest scope (local runs only).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Literal

from quart import request

from tally.ingest import IngestScope
from tally.store import Project, hash_secret

from ._problems import Problem
from ._services import ReportingServices

# What a route demands of its caller; an Operation names one.
Auth = Literal["none", "internal", "ingest", "api", "admin"]
Kind = Literal["internal", "ingest", "api", "open"]


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller.

    Invariant: ``projects`` is None for every caller but an api token of role
    ``project``, whose resources are limited to those (cloud, external_id) pairs.
    """

    kind: Kind
    actor: str
    role: str | None = None
    scope: IngestScope | None = None  # what an ingest credential may write
    project_ids: frozenset[str] = frozenset()
    projects: tuple[Project, ...] | None = None

    @property
    def restricted(self) -> bool:
        return self.projects is not None

    def owns(self, cloud: str, project_external_id: str) -> bool:
        if self.projects is None:
            return True
        return any(p.cloud == cloud and p.external_id == project_external_id for p in self.projects)


OPEN = Principal(kind="open", actor="auth-disabled", role="admin")
ANONYMOUS = Principal(kind="open", actor="anonymous")


def _unauthorized(detail: str) -> Problem:
    return Problem("unauthorized", detail, headers={"WWW-Authenticate": 'Bearer realm="tally"'})


def _bearer() -> str:
    header = request.headers.get("Authorization", "")
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise _unauthorized("a bearer token is required")
    return secret.strip()


async def authenticate(auth: Auth, services: ReportingServices) -> Principal:
    """The caller of this request, or a 401/403 problem when it may not use an ``auth`` route."""
    if auth == "none":
        return ANONYMOUS
    if services.settings.reporting_auth_mode == "disabled":
        return OPEN
    secret = _bearer()
    if auth == "internal":
        expected = services.settings.reporting_internal_token
        if expected is None or not hmac.compare_digest(
            secret.encode("utf-8"), expected.get_secret_value().encode("utf-8")
        ):
            raise _unauthorized("the internal token is required")
        return Principal(kind="internal", actor="internal")
    digest = hash_secret(secret)
    if auth == "ingest":
        credential = await services.store.ingest_credential_by_hash(digest)
        if credential is None:
            raise _unauthorized("an ingest credential is required (this one is unknown, revoked or expired)")
        actor = f"ingest:{credential.id}"
        return Principal(
            kind="ingest", actor=actor, scope=IngestScope(credential.platform, credential.cloud, actor)
        )
    token = await services.store.api_token_by_hash(digest)
    if token is None:
        raise _unauthorized("an API token is required (this one is unknown, revoked or expired)")
    if auth == "admin" and token.role != "admin":
        raise Problem("forbidden", "this route needs an API token of role admin")
    projects: tuple[Project, ...] | None = None
    if token.role == "project":
        found = [await services.store.get_project(pid) for pid in token.project_ids]
        projects = tuple(p for p in found if p is not None)
    return Principal(
        kind="api",
        actor=f"token:{token.id}",
        role=token.role,
        project_ids=frozenset(token.project_ids),
        projects=projects,
    )


def narrow(principal: Principal, cloud: str | None, project_id: str | None) -> tuple[str | None, str | None]:
    """The (cloud, project_id) filter a listing must use: a project token sees its own projects only.

    A token of one project is pinned to it; a token of several must name one
    with ``project_id`` (and ``cloud`` when the id exists in several clouds).
    """
    if principal.projects is None:
        return cloud, project_id
    candidates = [
        p
        for p in principal.projects
        if (cloud is None or p.cloud == cloud) and (project_id is None or p.external_id == project_id)
    ]
    if not candidates:
        raise Problem("forbidden", "this token may read only the resources of its own projects")
    if len(candidates) > 1:
        raise Problem("forbidden", "this token has several projects: name one with cloud and project_id")
    return candidates[0].cloud, candidates[0].external_id
