"""Keystone of the fake cloud: accounts, application credentials, tokens, the catalog, access rules.

Tokens are issued on the wall clock (clients check ``expires_at`` against their own clock),
kept in a table bounded by their lifetime, and carry what the services check: the project,
whether the roles include admin, and the access rules of an application credential.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, Final

TOKEN_LIFETIME: Final = timedelta(hours=1)
DOMAIN: Final = {"id": "default", "name": "Default"}

ADMIN_USER: Final = "tally-sync"
ADMIN_PASSWORD: Final = "tally-dev-sync-password"  # the documented development account, not a secret
ADMIN_PROJECT: Final = "service"
MEMBER_USER: Final = "tally-member"
MEMBER_PASSWORD: Final = "tally-dev-member-password"

#: The eight rules of a credential that only reads (seed 001, step 2).
READ_ONLY_RULES: Final[tuple[Mapping[str, str], ...]] = (
    {"service": "compute", "method": "GET", "path": "/**/servers/detail"},
    {"service": "compute", "method": "GET", "path": "/**/flavors/detail"},
    {"service": "compute", "method": "GET", "path": "/**/"},
    {"service": "block-storage", "method": "GET", "path": "/**/volumes/detail"},
    {"service": "block-storage", "method": "GET", "path": "/**/types"},
    {"service": "network", "method": "GET", "path": "/**/floatingips"},
    {"service": "image", "method": "GET", "path": "/**/images"},
    {"service": "load-balancer", "method": "GET", "path": "/**/lbaas/loadbalancers"},
)

#: Catalog entries: (type, name, path under the fake's root). Cinder is listed twice, as Kolla does.
CATALOG: Final = (
    ("identity", "keystone", "/v3"),
    ("compute", "nova", "/compute/v2.1"),
    ("block-storage", "cinderv3", "/volume/v3/{project_id}"),
    ("volumev3", "cinderv3", "/volume/v3/{project_id}"),
    ("network", "neutron", "/network"),
    ("image", "glance", "/image"),
    ("load-balancer", "octavia", "/load-balancer"),
)


def admin_cloud_entry(auth_url: str) -> dict[str, Any]:
    """The clouds.yaml entry of the admin account (its password), for any OpenStack client."""
    return {
        "auth_type": "password",
        "auth": {
            "auth_url": auth_url,
            "username": ADMIN_USER,
            "password": ADMIN_PASSWORD,
            "project_name": ADMIN_PROJECT,
            "user_domain_name": "Default",
            "project_domain_name": "Default",
        },
        "region_name": "RegionOne",
        "interface": "public",
    }


def _hex_id(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


@dataclass(frozen=True)
class User:
    id: str
    name: str
    password: str
    project_id: str
    project_name: str
    roles: tuple[str, ...]
    # Roles on the Default domain: a token scoped to the domain carries these.
    domain_roles: tuple[str, ...] = ()


@dataclass(frozen=True)
class AppCredential:
    """An application credential of a user; ``access_rules`` ``None`` means no rule restricts it.

    ``roles`` are the names of the roles it delegates (the user's, when none were asked for);
    ``unrestricted`` is keystone's flag that lets it manage other credentials.
    """

    id: str
    name: str
    secret: str
    user: User
    access_rules: tuple[Mapping[str, str], ...] | None = None
    expires_at: datetime | None = None
    deleted: bool = False
    description: str | None = None
    roles: tuple[str, ...] | None = None
    unrestricted: bool = False

    @property
    def role_names(self) -> tuple[str, ...]:
        return self.user.roles if self.roles is None else self.roles


@dataclass(frozen=True)
class Token:
    """What keystonemiddleware in front of each service learns from a token."""

    user: User
    project_id: str
    is_admin: bool
    app_credential: AppCredential | None
    expires_at: datetime
    methods: tuple[str, ...] = ()
    domain_id: str | None = None  # a domain-scoped token: project_id is "" and the roles are the domain's

    @property
    def roles(self) -> tuple[str, ...]:
        if self.app_credential is not None:
            return self.app_credential.role_names
        return self.user.domain_roles if self.domain_id is not None else self.user.roles

    @property
    def restricted(self) -> bool:
        return self.app_credential is not None and self.app_credential.access_rules is not None


@dataclass
class Accounts:
    """The fake's keystone accounts.

    ``admin``: the spec's admin account (project ``service``, roles admin/member/reader).
    ``member``: an account without admin, scoped to ``member_project_id`` (a world project).
    Application credentials of the admin: ``unrestricted``, ``read_only`` (the eight rules of
    seed 001), ``expired`` and ``deleted`` (keystone refuses both).
    """

    admin: User
    member: User
    credentials: dict[str, AppCredential] = field(default_factory=dict)
    tokens: dict[str, Token] = field(default_factory=dict)
    tenants: list[User] = field(default_factory=list)

    def add_tenant(
        self,
        name: str,
        project_id: str,
        project_name: str,
        roles: tuple[str, ...],
        *,
        domain_roles: tuple[str, ...] = (),
    ) -> User:
        """A user of ``project_id`` with ``roles`` there (and ``domain_roles`` on the Default domain);
        its password is ``<name>-password``. Keystone's implied roles are the caller's to list."""
        user = User(
            _hex_id(f"user/{name}"), name, f"{name}-password", project_id, project_name, roles, domain_roles
        )
        self.tenants.append(user)
        return user

    @classmethod
    def default(cls, cloud: str, member_project_id: str, member_project_name: str) -> Accounts:
        admin = User(
            id=_hex_id(f"{cloud}/user/{ADMIN_USER}"),
            name=ADMIN_USER,
            password=ADMIN_PASSWORD,
            project_id=_hex_id(f"{cloud}/project/{ADMIN_PROJECT}"),
            project_name=ADMIN_PROJECT,
            roles=("admin", "member", "reader"),
        )
        member = User(
            id=_hex_id(f"{cloud}/user/{MEMBER_USER}"),
            name=MEMBER_USER,
            password=MEMBER_PASSWORD,
            project_id=member_project_id,
            project_name=member_project_name,
            roles=("member", "reader"),
        )
        accounts = cls(admin=admin, member=member)
        long_ago = datetime(2000, 1, 1, tzinfo=UTC)
        for name, rules, expires, deleted in (
            ("unrestricted", None, None, False),
            ("read-only", READ_ONLY_RULES, None, False),
            ("expired", None, long_ago, False),
            ("deleted", None, None, True),
        ):
            cred = AppCredential(
                id=_hex_id(f"{cloud}/appcred/{name}"),
                name=f"tally-{name}",
                secret=f"tally-dev-{name}-secret",
                user=admin,
                access_rules=rules,
                expires_at=expires,
                deleted=deleted,
            )
            accounts.credentials[cred.id] = cred
        return accounts

    def credential(self, name: str) -> AppCredential:
        """The application credential ``tally-<name>`` (unrestricted, read-only, expired, deleted)."""
        for cred in self.credentials.values():
            if cred.name == f"tally-{name}":
                return cred
        raise KeyError(name)

    def user_by(self, ref: Mapping[str, Any]) -> User | None:
        for user in (self.admin, self.member, *self.tenants):
            if ref.get("id") == user.id:
                return user
            if ref.get("name") == user.name and _domain_ok(ref.get("domain")):
                return user
        return None

    def issue(self, token: Token) -> str:
        now = datetime.now(UTC)
        for key in [k for k, t in self.tokens.items() if t.expires_at <= now]:
            del self.tokens[key]
        value = "gAAAAA" + secrets.token_urlsafe(48)
        self.tokens[value] = token
        return value

    def validate(self, value: str | None) -> Token | None:
        if not value:
            return None
        token = self.tokens.get(value)
        if token is None or token.expires_at <= datetime.now(UTC):
            return None
        return token


def _domain_ok(domain: object) -> bool:
    if not isinstance(domain, dict):
        return False
    return domain.get("id") == "default" or domain.get("name") == "Default"


class KeystoneError(Exception):
    """A refusal with keystone's own status, title and message."""

    def __init__(self, code: int, title: str, message: str) -> None:
        super().__init__(message)
        self.code, self.title, self.message = code, title, message


def _unauthorized() -> KeystoneError:
    # Keystone hides why authentication failed unless insecure_debug is on.
    return KeystoneError(401, "Unauthorized", "The request you have made requires authentication.")


def _bad_request(attribute: str, target: str) -> KeystoneError:
    return KeystoneError(
        400,
        "Bad Request",
        f"Expecting to find {attribute} in {target}. The server could not comply with the request since it "
        "is either malformed or otherwise incorrect. The client is assumed to be in error.",
    )


def authenticate(accounts: Accounts, body: object) -> Token:
    """Check a ``POST /v3/auth/tokens`` body and return the token it earns, or raise KeystoneError."""
    if not isinstance(body, dict) or not isinstance(body.get("auth"), dict):
        raise _bad_request("auth", "request body")
    auth = body["auth"]
    identity = auth.get("identity")
    if not isinstance(identity, dict) or not isinstance(identity.get("methods"), list):
        raise _bad_request("identity", "auth")
    methods = identity["methods"]
    scope = auth.get("scope")
    now = datetime.now(UTC)
    if methods == ["application_credential"]:
        info = identity.get("application_credential")
        if not isinstance(info, dict):
            raise _bad_request("application_credential", "identity")
        if not info.get("secret"):
            raise _bad_request("secret", "application_credential")
        if scope is not None:
            raise _unauthorized()
        cred = accounts.credentials.get(str(info.get("id", "")))
        if cred is None and "name" in info and isinstance(info.get("user"), dict):
            owner = accounts.user_by(info["user"])
            cred = next(
                (c for c in accounts.credentials.values() if c.name == info["name"] and c.user == owner), None
            )
        if cred is None or cred.deleted or cred.secret != info["secret"]:
            raise _unauthorized()
        if cred.expires_at is not None and cred.expires_at <= now:
            raise _unauthorized()
        return Token(
            cred.user,
            cred.user.project_id,
            "admin" in cred.role_names,
            cred,
            now + TOKEN_LIFETIME,
            ("application_credential",),
        )
    if methods == ["token"]:
        return _from_token(accounts, identity.get("token"), scope)
    if methods == ["password"]:
        password = identity.get("password")
        if not isinstance(password, dict) or not isinstance(password.get("user"), dict):
            raise _bad_request("user", "password")
        ref = password["user"]
        user = accounts.user_by(ref)
        if user is None or ref.get("password") != user.password:
            raise _unauthorized()
        domain_id = _check_scope(user, scope)
        if domain_id is not None:
            return Token(
                user, "", "admin" in user.domain_roles, None, now + TOKEN_LIFETIME, ("password",), domain_id
            )
        return Token(user, user.project_id, "admin" in user.roles, None, now + TOKEN_LIFETIME, ("password",))
    raise _unauthorized()


def _check_scope(user: User, scope: object) -> str | None:
    """Refuse a scope other than the user's one project (by id, or by name within its domain) or the
    Default domain for a user with roles there; the domain's id when the scope is the domain."""
    if scope is None:
        return None
    domain = scope.get("domain") if isinstance(scope, dict) else None
    if domain is not None:
        if not user.domain_roles or not _domain_ok(domain):
            raise _unauthorized()
        return str(DOMAIN["id"])
    project = scope.get("project") if isinstance(scope, dict) else None
    if not isinstance(project, dict):
        raise _unauthorized()
    if project.get("id") not in (None, user.project_id):
        raise _unauthorized()
    if project.get("id") is None and (
        project.get("name") != user.project_name or not _domain_ok(project.get("domain"))
    ):
        raise _unauthorized()
    return None


def forbidden(action: str) -> KeystoneError:
    """Keystone's ForbiddenAction."""
    return KeystoneError(
        403, "Forbidden", f"You are not authorized to perform the requested action: {action}."
    )


def _from_token(accounts: Accounts, info: object, scope: object) -> Token:
    """The ``token`` method (keystoneauth1's token plugin): a new token for the one presented, expiring
    when it does (keystone never extends a token), for the same user and project; one of an
    application credential may be renewed but not scoped, as in keystone."""
    if not isinstance(info, dict) or not info.get("id"):
        raise _bad_request("id", "token")
    presented = accounts.validate(str(info["id"]))
    if presented is None:
        raise KeystoneError(404, "Not Found", f"Could not find token: {info['id']}.")
    if presented.app_credential is not None and scope:
        raise forbidden("Using an application credential token to create a scoped token is not allowed.")
    domain_id = _check_scope(presented.user, scope) if scope else presented.domain_id
    if scope and domain_id is None:
        presented = replace(presented, project_id=presented.user.project_id, domain_id=None)
    elif domain_id is not None:
        presented = replace(presented, project_id="", domain_id=domain_id)
    return replace(presented, methods=tuple(dict.fromkeys((*presented.methods, "token"))))


def _stamp(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def token_body(
    token: Token, base_url: str, *, with_catalog: bool = True, absent: Collection[str] = ()
) -> dict[str, Any]:
    """The token document keystone answers, with the catalog built on ``base_url`` (the request's host)
    and without the services of the types ``absent`` names."""
    user = token.user
    roles = [{"id": _hex_id(f"role/{r}"), "name": r} for r in token.roles]
    body: dict[str, Any] = {
        "methods": list(token.methods),
        "user": {"id": user.id, "name": user.name, "domain": dict(DOMAIN), "password_expires_at": None},
        "audit_ids": [secrets.token_urlsafe(16)[:22]],
        "issued_at": _stamp(token.expires_at - TOKEN_LIFETIME),
        "expires_at": _stamp(token.expires_at),
        "roles": roles,
    }
    # Keystone's render_token: a domain scope names the domain, a project scope the project and is_domain.
    if token.domain_id is not None:
        body["domain"] = dict(DOMAIN)
    else:
        body["project"] = {"id": token.project_id, "name": user.project_name, "domain": dict(DOMAIN)}
        body["is_domain"] = False
    if token.app_credential is not None:
        cred = token.app_credential
        body["application_credential"] = {
            "id": cred.id,
            "name": cred.name,
            "restricted": not cred.unrestricted,
        }
        if cred.access_rules is not None:
            body["application_credential"]["access_rules"] = access_rule_refs(cred.access_rules)
    if with_catalog:
        body["catalog"] = catalog(base_url, token.project_id or "", absent)
    return {"token": body}


def role_ref(name: str) -> dict[str, Any]:
    """A role as keystone names it in an application credential."""
    return {"id": _hex_id(f"role/{name}"), "name": name, "domain_id": None}


def access_rule_refs(rules: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """Access rules as keystone shows them: each with its id (a rule created without one gets one)."""
    return [{"id": rule.get("id") or _hex_id(f"rule/{i}"), **rule} for i, rule in enumerate(rules)]


def catalog(base_url: str, project_id: str, absent: Collection[str] = ()) -> list[dict[str, Any]]:
    # A service left out takes its aliases along (cinder's volumev3 with block-storage).
    gone = {name for service_type, name, _ in CATALOG if service_type in absent}
    entries = []
    for service_type, name, path in CATALOG:
        if name in gone:
            continue
        url = base_url + path.format(project_id=project_id)
        entries.append(
            {
                "type": service_type,
                "name": name,
                "id": _hex_id(f"service/{service_type}"),
                "endpoints": [
                    {
                        "id": _hex_id(f"endpoint/{service_type}/{interface}"),
                        "interface": interface,
                        "region": "RegionOne",
                        "region_id": "RegionOne",
                        "url": url,
                    }
                    for interface in ("public", "internal", "admin")
                ],
            }
        )
    return entries


@lru_cache(maxsize=64)
def _rule_regex(pattern: str) -> re.Pattern[str]:
    # keystonemiddleware's reading of a rule path: ** spans '/', * and {tag} stay within one segment.
    out = []
    for match in re.finditer(r"(?P<tag>\{[^}]*\})|(?P<rec>\*\*)|(?P<wild>\*)|(?P<lit>[^{}*]+)", pattern):
        if match.group("tag") or match.group("wild"):
            out.append(r"[^/]+")
        elif match.group("rec"):
            out.append(".*")
        else:
            out.append(re.escape(match.group("lit")))
    return re.compile("^" + "".join(out) + "$")


def rules_allow(rules: Sequence[Mapping[str, str]], service_type: str, method: str, path: str) -> bool:
    """Whether any access rule names this request (service type, method, whole path)."""
    for rule in rules:
        if rule.get("service") != service_type or rule.get("method", "").upper() != method.upper():
            continue
        if _rule_regex(rule.get("path", "")).match(path):
            return True
    return False
