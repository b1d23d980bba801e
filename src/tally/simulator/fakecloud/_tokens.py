"""Keystone's token checks of the fake cloud, as keystone answers them to a service.

``GET``/``HEAD /v3/auth/tokens``: the caller's token (``X-Auth-Token``) may check the token named by
``X-Subject-Token`` when it has the admin or service role, or is that token's own user (keystone's
``identity:validate_token``: ``admin_required or (role:reader and system_scope:all) or
rule:service_role or rule:token_subject``); the answer is the token document, its scope (``project``
or ``domain``) and its roles, or 404 ``Could not find token`` for a token keystone does not know,
has revoked, or let expire. ``DELETE /v3/auth/tokens`` revokes the subject token (admin or its own
user; 204). ``GET /v3/projects?domain_id=`` lists a domain's projects to an admin: the world's
projects and the admin's own.
"""

from __future__ import annotations

from collections.abc import Callable

from quart import Quart, Response, request

from ._appcreds import Identity
from ._common import json_response
from ._keystone import DOMAIN, Accounts, KeystoneError, Token, forbidden, token_body


def _not_found(subject: str) -> KeystoneError:
    return KeystoneError(404, "Not Found", f"Could not find token: {subject}.")


def _may_check(caller: Token, subject: Token | None) -> bool:
    roles = set(caller.roles)
    return bool(roles & {"admin", "service"}) or (subject is not None and subject.user.id == caller.user.id)


def register(
    app: Quart,
    identity: Identity,
    accounts: Accounts,
    base_url: Callable[[], str],
    absent: Callable[[], frozenset[str]],
    world_projects: Callable[[], list[tuple[str, str]]],
) -> None:
    """The token-check, revocation and project-listing routes; ``identity`` authenticates the caller."""

    @app.route("/v3/auth/tokens", methods=["GET", "HEAD"])
    async def check_token() -> Response:
        value = request.headers.get("X-Subject-Token", "")

        def run(caller: Token) -> Response:
            subject = accounts.validate(value)
            if not _may_check(caller, subject):
                raise forbidden("identity:validate_token")
            if subject is None:
                raise _not_found(value)
            body = token_body(
                subject, base_url(), with_catalog="nocatalog" not in request.args, absent=absent()
            )
            return json_response(body, 200, {"X-Subject-Token": value})

        return await identity(run)

    @app.delete("/v3/auth/tokens")
    async def revoke_token() -> Response:
        value = request.headers.get("X-Subject-Token", "")

        def run(caller: Token) -> Response:
            subject = accounts.validate(value)
            if subject is None:
                raise _not_found(value)
            if "admin" not in caller.roles and subject.user.id != caller.user.id:
                raise forbidden("identity:revoke_token")
            del accounts.tokens[value]
            return Response(b"", 204)

        return await identity(run)

    @app.get("/v3/projects")
    async def list_projects() -> Response:
        def run(caller: Token) -> Response:
            if "admin" not in caller.roles:
                raise forbidden("identity:list_projects")
            wanted = request.args.get("domain_id")
            own = (accounts.admin.project_id, accounts.admin.project_name)
            projects = [] if wanted not in (None, DOMAIN["id"]) else [*world_projects(), own]
            listed = [
                {"id": pid, "name": name, "domain_id": DOMAIN["id"], "is_domain": False, "enabled": True}
                for pid, name in dict.fromkeys(projects)
            ]
            return json_response({"projects": listed, "links": {"self": f"{base_url()}/v3/projects"}})

        return await identity(run)
