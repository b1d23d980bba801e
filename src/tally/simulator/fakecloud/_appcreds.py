"""Keystone's application-credential API of the fake cloud, as keystone answers it.

``POST/GET /v3/users/{user_id}/application_credentials`` and ``GET/DELETE .../{id}``: a user manages
its own credentials only (403 for another user's), a token obtained with a credential that is not
``unrestricted`` manages none (403), a name is unique per user (409), the roles are a subset of the
token's (400 otherwise; all of them when none are asked for), the secret is shown once (generated when
not given), and each access rule gets an id. A created credential authenticates at once, and its rules
are enforced by the same gate as the built-in ones.
"""

from __future__ import annotations

import base64
import secrets
import uuid
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import orjson
from quart import Quart, Response, request

from ._common import json_response
from ._keystone import Accounts, AppCredential, KeystoneError, Token, access_rule_refs, forbidden, role_ref

Identity = Callable[[Callable[[Token], Response]], Awaitable[Response]]

METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"})
NOT_UNRESTRICTED: Final = (
    "Using method 'application_credential' is not allowed for managing additional application credentials."
)


def _invalid(detail: str) -> KeystoneError:
    return KeystoneError(400, "Bad Request", f"Invalid application credential: {detail}")


def _schema(message: str) -> KeystoneError:
    return KeystoneError(400, "Bad Request", f"Invalid input for field 'application_credential': {message}")


def _not_found(credential_id: str) -> KeystoneError:
    return KeystoneError(404, "Not Found", f"Could not find Application Credential: {credential_id}.")


def _own(token: Token, user_id: str, *, managing: bool) -> None:
    if managing and token.app_credential is not None and not token.app_credential.unrestricted:
        raise forbidden(NOT_UNRESTRICTED)
    if token.user.id != user_id:
        raise forbidden("Cannot manage an application credential of another user.")


def _stamp(value: datetime | None) -> str | None:
    return None if value is None else value.strftime("%Y-%m-%dT%H:%M:%S.%f")


def view(cred: AppCredential, base_url: str, *, secret: bool = False) -> dict[str, Any]:
    """The credential as keystone shows it; the secret only in the answer to its create."""
    doc: dict[str, Any] = {
        "id": cred.id,
        "name": cred.name,
        "description": cred.description,
        "project_id": cred.user.project_id,
        "roles": [role_ref(r) for r in cred.role_names],
        "expires_at": _stamp(cred.expires_at),
        "unrestricted": cred.unrestricted,
        "access_rules": access_rule_refs(cred.access_rules or ()),
        "links": {"self": f"{base_url}/v3/users/{cred.user.id}/application_credentials/{cred.id}"},
    }
    if secret:
        doc["secret"] = cred.secret
    return doc


def _roles(asked: object, token: Token) -> tuple[str, ...] | None:
    if asked is None or asked == []:
        return None
    if not isinstance(asked, list) or not all(isinstance(r, dict) for r in asked):
        raise _schema("roles must be a list of objects naming a role by id or name")
    held = {role_ref(name)["id"]: name for name in token.user.roles}
    names = []
    for ref in asked:
        name = held.get(str(ref.get("id"))) if ref.get("id") else ref.get("name")
        if name not in held.values():
            raise _invalid("Cannot create an application credential with unassigned role")
        names.append(str(name))
    return tuple(dict.fromkeys(names))


def _access_rules(asked: object) -> tuple[Mapping[str, str], ...] | None:
    if asked is None or asked == []:
        return None
    if not isinstance(asked, list):
        raise _schema("access_rules must be a list")
    rules = []
    for rule in asked:
        if not isinstance(rule, dict) or not all(isinstance(rule.get(k), str) for k in ("service", "path")):
            raise _schema(f"an access rule needs a service and a path: {rule!r}")
        method = str(rule.get("method", "")).upper()
        if method not in METHODS:
            raise _schema(f"{rule.get('method')!r} is not one of {sorted(METHODS)}")
        rules.append(
            {
                "id": str(rule.get("id") or uuid.uuid4().hex),
                "service": rule["service"],
                "method": method,
                "path": rule["path"],
            }
        )
    return tuple(rules)


def _expiry(value: object) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise _schema(f"expires_at {value!r} is not a date-time") from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def create(accounts: Accounts, token: Token, user_id: str, body: object) -> AppCredential:
    _own(token, user_id, managing=True)
    doc = body.get("application_credential") if isinstance(body, dict) else None
    if not isinstance(doc, dict):
        raise _schema("'application_credential' is a required property")
    name = doc.get("name")
    if not isinstance(name, str) or not 1 <= len(name) <= 255:
        raise _schema("'name' is a required property of 1 to 255 characters")
    if any(c.name == name and c.user.id == user_id and not c.deleted for c in accounts.credentials.values()):
        raise KeystoneError(
            409,
            "Conflict",
            "Conflict occurred attempting to store application_credential - "
            f"Duplicate entry found with name {name}.",
        )
    secret = doc.get("secret") or base64.urlsafe_b64encode(secrets.token_bytes(64)).rstrip(b"=").decode()
    cred = AppCredential(
        id=uuid.uuid4().hex,
        name=name,
        secret=str(secret),
        user=token.user,
        access_rules=_access_rules(doc.get("access_rules")),
        expires_at=_expiry(doc.get("expires_at")),
        description=doc.get("description") if isinstance(doc.get("description"), str) else None,
        roles=_roles(doc.get("roles"), token),
        unrestricted=doc.get("unrestricted") is True,
    )
    accounts.credentials[cred.id] = cred
    return cred


def listed(accounts: Accounts, token: Token, user_id: str, name: str | None) -> list[AppCredential]:
    _own(token, user_id, managing=False)
    return [
        c
        for c in accounts.credentials.values()
        if c.user.id == user_id and not c.deleted and (name is None or c.name == name)
    ]


def shown(accounts: Accounts, token: Token, user_id: str, credential_id: str) -> AppCredential:
    _own(token, user_id, managing=False)
    cred = accounts.credentials.get(credential_id)
    if cred is None or cred.deleted or cred.user.id != user_id:
        raise _not_found(credential_id)
    return cred


def delete(accounts: Accounts, token: Token, user_id: str, credential_id: str) -> None:
    _own(token, user_id, managing=True)
    shown(accounts, token, user_id, credential_id)
    del accounts.credentials[credential_id]


def register(app: Quart, identity: Identity, accounts: Accounts, base_url: Callable[[], str]) -> None:
    """The four routes; ``identity`` authenticates a request, runs the handler and words its refusal."""

    @app.post("/v3/users/<user_id>/application_credentials")
    async def create_application_credential(user_id: str) -> Response:
        try:
            body = orjson.loads(await request.get_data())
        except orjson.JSONDecodeError:
            body = None

        def run(token: Token) -> Response:
            cred = create(accounts, token, user_id, body)
            return json_response({"application_credential": view(cred, base_url(), secret=True)}, 201)

        return await identity(run)

    @app.get("/v3/users/<user_id>/application_credentials")
    async def list_application_credentials(user_id: str) -> Response:
        def run(token: Token) -> Response:
            creds = listed(accounts, token, user_id, request.args.get("name"))
            url = f"{base_url()}/v3/users/{user_id}/application_credentials"
            return json_response(
                {
                    "application_credentials": [view(c, base_url()) for c in creds],
                    "links": {"self": url, "previous": None, "next": None},
                }
            )

        return await identity(run)

    @app.get("/v3/users/<user_id>/application_credentials/<credential_id>")
    async def show_application_credential(user_id: str, credential_id: str) -> Response:
        return await identity(
            lambda token: json_response(
                {"application_credential": view(shown(accounts, token, user_id, credential_id), base_url())}
            )
        )

    @app.delete("/v3/users/<user_id>/application_credentials/<credential_id>")
    async def delete_application_credential(user_id: str, credential_id: str) -> Response:
        def run(token: Token) -> Response:
            delete(accounts, token, user_id, credential_id)
            return Response(status=204)

        return await identity(run)
