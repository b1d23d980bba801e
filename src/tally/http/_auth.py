"""Who is calling: the internal token, ingest credentials and API tokens, from ``Authorization: Bearer``.

Secrets are never stored: the store holds the sha256 of each ingest credential and API token and is
asked for the hash on every request, so a revoked or expired secret is refused from the next request on.
The lean lane's listings ask in the page's own statement instead of a round trip of their own: the role
of a read_all or admin token found usable is remembered (``KnownTokens``, by hash), and the listing is
read as that token (``readable_by``), which the store refuses with ``TokenNotUsable`` once the token is
revoked or expired. The internal token comes from the settings and is compared in constant time.
A keystone token (``X-Auth-Token``, or a bearer token that is no Tally secret) on a read route of a
server with clouds taking keystone tokens is checked by ``_keystone``; write routes refuse it.
``TALLY_REPORTING_AUTH_MODE=disabled`` lets every caller through as an admin with no ingest scope (local
runs only).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Literal

from tally.ingest import IngestScope
from tally.store import Project, hash_secret

from ._principal import CloudView, KnownTokens, Principal
from ._problems import Problem
from ._services import ReportingServices

# What a route demands of its caller; an Operation names one.
Auth = Literal["none", "internal", "ingest", "api", "admin"]


OPEN = Principal(kind="open", actor="auth-disabled", role="admin")
ANONYMOUS = Principal(kind="open", actor="anonymous")


# Tally's own secrets (API tokens, ingest credentials) start so; a bearer token that does not is keystone's.
TALLY_SECRET_PREFIXES = ("tly_", "tli_")


@dataclass(frozen=True, slots=True)
class KeystoneAsk:
    """What a request says for a keystone token: the ``X-Auth-Token`` header, the cloud it names (its
    path's or query's ``cloud``) and the operation it calls (the policy rule is the operation's)."""

    x_auth_token: str
    cloud: str | None
    operation_id: str


OWN_ONLY = "this token may read only the resources of its own projects"


def _unauthorized(detail: str) -> Problem:
    return Problem("unauthorized", detail, headers={"WWW-Authenticate": 'Bearer realm="tally"'})


def api_token_refused() -> Problem:
    return _unauthorized("an API token is required (this one is unknown, revoked or expired)")


def _bearer(header: str) -> str:
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise _unauthorized("a bearer token is required")
    return secret.strip()


def _keystone_bearer(authorization: str) -> str | None:
    """A bearer token that may be keystone's: one that is no Tally secret by its prefix."""
    scheme, _, secret = authorization.partition(" ")
    secret = secret.strip()
    if scheme.lower() == "bearer" and secret and not secret.startswith(TALLY_SECRET_PREFIXES):
        return secret
    return None


def _keystone_route(auth: Auth) -> None:
    if auth == "admin":
        raise Problem("forbidden", "this route needs an API token of role admin")


async def authenticate(
    auth: Auth,
    services: ReportingServices,
    authorization: str,
    *,
    known: KnownTokens | None = None,
    keystone: KeystoneAsk | None = None,
) -> Principal:
    """The caller of this request (its ``Authorization`` header), or a 401/403 problem when it may not
    use an ``auth`` route. With ``known`` (the lean lane), an ``api`` route's token may be recalled
    from it: the principal is then ``recalled`` and the handler's read checks the token. With
    ``keystone`` (the request's ``X-Auth-Token``, cloud and operation) and a cloud taking keystone
    tokens, a keystone token is checked by that cloud's keystone (``_keystone``): the one in
    ``X-Auth-Token``, or a bearer token that is no Tally secret (its cached answer first; else a
    bearer token the store does not know)."""
    if auth == "none":
        return ANONYMOUS
    if services.settings.reporting_auth_mode == "disabled":
        return OPEN
    tokens = services.keystone if auth in ("api", "admin") else None
    candidate: str | None = None
    if tokens is not None and keystone is not None:
        if keystone.x_auth_token:
            _keystone_route(auth)
            return await tokens.principal(keystone.x_auth_token, keystone.cloud, keystone.operation_id)
        candidate = _keystone_bearer(authorization)
        cached = (
            None if candidate is None else tokens.recall(candidate, keystone.cloud, keystone.operation_id)
        )
        if cached is not None:
            _keystone_route(auth)
            return cached
    secret = _bearer(authorization)
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
    if known is not None and auth == "api":
        recalled = known.recall(digest)
        if recalled is not None:
            return recalled
    token = await services.store.api_token_by_hash(digest)
    if token is None:
        if tokens is not None and keystone is not None and candidate is not None and auth == "api":
            return await tokens.principal(candidate, keystone.cloud, keystone.operation_id)
        raise api_token_refused()
    if auth == "admin" and token.role != "admin":
        raise Problem("forbidden", "this route needs an API token of role admin")
    projects: tuple[Project, ...] | None = None
    if token.role == "project":
        found = [await services.store.get_project(pid) for pid in token.project_ids]
        projects = tuple(p for p in found if p is not None)
    principal = Principal(
        kind="api",
        actor=f"token:{token.id}",
        role=token.role,
        project_ids=frozenset(token.project_ids),
        projects=projects,
    )
    if known is not None and projects is None:
        known.remember(digest, principal)
    return principal


def narrow(principal: Principal, cloud: str | None, project_id: str | None) -> tuple[str | None, str | None]:
    """The (cloud, project_id) filter a listing must use: a project token sees its own projects only.

    A token of one project is pinned to it; a token of several must name one
    with ``project_id`` (and ``cloud`` when the id exists in several clouds).
    """
    if principal.view is not None:
        return _narrow_view(principal.view, cloud, project_id)
    if principal.projects is None:
        return cloud, project_id
    candidates = [
        p
        for p in principal.projects
        if (cloud is None or p.cloud == cloud) and (project_id is None or p.external_id == project_id)
    ]
    if not candidates:
        raise Problem("forbidden", OWN_ONLY)
    if len(candidates) > 1:
        raise Problem("forbidden", "this token has several projects: name one with cloud and project_id")
    return candidates[0].cloud, candidates[0].external_id


def _narrow_view(view: CloudView, cloud: str | None, project_id: str | None) -> tuple[str, str | None]:
    # The same words whether the project named exists or not: a refusal tells nothing of other projects.
    if cloud is not None and cloud != view.cloud:
        raise Problem("forbidden", OWN_ONLY)
    if view.projects is None:
        return view.cloud, project_id
    if project_id is None:
        if len(view.projects) == 1:
            return view.cloud, next(iter(view.projects))
        raise Problem("forbidden", "this token has several projects: name one with project_id")
    if project_id not in view.projects:
        raise Problem("forbidden", OWN_ONLY)
    return view.cloud, project_id
