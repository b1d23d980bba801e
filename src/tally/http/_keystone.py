"""Keystone tokens on the read routes: which cloud's keystone, the cache of valid tokens, the principal.

A clouds config entry with ``keystone: {os_cloud: <clouds.yaml entry>}`` takes its tenants' keystone
tokens: they are checked against that entry's keystone with that entry's (service) credential. A
token is good for its own cloud only: the request names the cloud (``cloud`` in the query or path)
when several take keystone tokens, and a token is only ever checked by the keystone of the cloud it
is used for, so another keystone's token is unknown there (401).

A valid token is remembered by its sha256 (never the token) until it expires or for
``TALLY_REPORTING_KEYSTONE_CACHE_S``, whichever comes first: a revoked token stops working within
that bound. What the policy makes of it (``_policy``) is remembered with it, per route rule.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from tally.config import Settings, load_clouds_config
from tally.openstack import KeystoneUnavailable, TokenChecker, TokenInfo, resolve_cloud

from ._metrics import KEYSTONE_CACHE_HITS, KEYSTONE_REFUSALS, KEYSTONE_VALIDATIONS
from ._policy import ROUTE_RULES, SCOPE_RULES, TallyPolicy
from ._principal import CloudView, Principal
from ._problems import Problem

log = logging.getLogger(__name__)

MAX_TOKEN_CHARS = 8192  # keystone's own max_token_size is 255 for fernet; a PKI-era token was longer
RETRY_AFTER_S = "5"
T = TypeVar("T")


def refused(reason: str, detail: str) -> Problem:
    KEYSTONE_REFUSALS.labels(reason).inc()
    log.info("keystone token refused reason=%s", reason)
    return Problem("unauthorized", detail, headers={"WWW-Authenticate": 'Bearer realm="tally"'})


def forbidden(reason: str, detail: str) -> Problem:
    KEYSTONE_REFUSALS.labels(reason).inc()
    return Problem("forbidden", detail)


@dataclass(slots=True)
class _Known:
    info: TokenInfo
    until: float  # monotonic
    domain_projects: frozenset[str] | None = None
    views: dict[str, CloudView] = field(default_factory=dict)


class KeystoneTokens:
    """The keystone of each cloud that takes keystone tokens, the cache and the policy."""

    def __init__(
        self, checkers: Mapping[str, TokenChecker], policy: TallyPolicy, *, cache_s: float, size: int = 4096
    ) -> None:
        self._checkers = dict(checkers)
        self._policy = policy
        self._cache_s = cache_s
        self._size = size
        self._known: dict[str, _Known] = {}

    def _cloud(self, hint: str | None) -> str:
        if hint is not None:
            if hint not in self._checkers:
                raise refused("foreign", f"cloud {hint!r} takes no keystone token here")
            return hint
        if len(self._checkers) == 1:
            return next(iter(self._checkers))
        raise refused("no_cloud", "several clouds take keystone tokens: name the cloud (query cloud)")

    async def _known_token(self, cloud: str, token: str) -> _Known:
        key = _key(cloud, token)
        known = self._known.get(key)
        now = time.monotonic()
        if known is not None and now < known.until:
            if known.info.expires_at <= datetime.now(UTC):
                del self._known[key]
                raise refused("expired", "the keystone token has expired")
            KEYSTONE_CACHE_HITS.labels(cloud).inc()
            return known
        self._known.pop(key, None)
        info = await self._check(cloud, token)
        lifetime = (info.expires_at - datetime.now(UTC)).total_seconds()
        known = _Known(info, now + min(self._cache_s, lifetime))
        if info.domain_id is not None:
            known.domain_projects = await self._guarded(
                cloud, self._checkers[cloud].domain_projects(info.domain_id)
            )
        if len(self._known) >= self._size:
            del self._known[next(iter(self._known))]
        self._known[key] = known
        return known

    async def _check(self, cloud: str, token: str) -> TokenInfo:
        info = await self._guarded(cloud, self._checkers[cloud].check(token))
        if info is None:
            KEYSTONE_VALIDATIONS.labels(cloud, "not_found").inc()
            raise refused(
                "not_found", "keystone does not know this token (unknown, revoked, expired or foreign)"
            )
        KEYSTONE_VALIDATIONS.labels(cloud, "valid").inc()
        if info.expires_at <= datetime.now(UTC):
            raise refused("expired", "the keystone token has expired")
        return info

    async def _guarded(self, cloud: str, call: Awaitable[T]) -> T:
        try:
            return await call
        except (KeystoneUnavailable, TimeoutError) as exc:
            KEYSTONE_VALIDATIONS.labels(cloud, "unavailable").inc()
            KEYSTONE_REFUSALS.labels("unavailable").inc()
            log.warning("keystone unavailable cloud=%s: %s", cloud, exc or "no answer in time")
            raise Problem(
                "unavailable",
                f"the keystone of cloud {cloud!r} did not answer; try again later",
                headers={"Retry-After": RETRY_AFTER_S},
            ) from None

    def _view(self, cloud: str, known: _Known, operation_id: str) -> CloudView:
        rule = ROUTE_RULES.get(operation_id)
        if rule is None:
            raise forbidden("route", "this route takes Tally API tokens only, not keystone tokens")
        cached = known.views.get(rule[0])
        if cached is not None:
            return cached
        info = known.info
        creds = {
            "user_id": info.user_id,
            "roles": sorted(info.roles),
            "project_id": info.project_id,
            "project_domain_id": info.project_domain_id,
            "domain_id": info.domain_id,
            "system_scope": "all" if info.system else None,
        }
        target = {k: v for k, v in (("project_id", info.project_id), ("domain_id", info.domain_id)) if v}
        if not self._policy.allows(rule[0], creds, target):
            raise forbidden("policy", f"the token's roles do not allow {rule[0]}")
        view: CloudView | None = None
        for scope in SCOPE_RULES:
            if not self._policy.allows(scope, creds, target):
                continue
            if scope == "tally:read:all":
                view = CloudView(cloud, None)
            elif scope == "tally:read:domain" and known.domain_projects is not None:
                view = CloudView(cloud, known.domain_projects)
            elif scope == "tally:read:project" and info.project_id is not None:
                view = CloudView(cloud, frozenset({info.project_id}))
            if view is not None:
                break
        if view is None:
            raise forbidden("policy", "the token's roles and scope allow no tally:read rule")
        known.views[rule[0]] = view
        return view

    def recall(self, token: str, cloud_hint: str | None, operation_id: str) -> Principal | None:
        """The caller of a token found in the cache and still good, without asking keystone; None
        otherwise (a bearer token may yet be Tally's own)."""
        if cloud_hint is not None:
            cloud = cloud_hint
        elif len(self._checkers) == 1:
            cloud = next(iter(self._checkers))
        else:
            return None
        known = self._known.get(_key(cloud, token))
        if known is None or time.monotonic() >= known.until or known.info.expires_at <= datetime.now(UTC):
            return None
        KEYSTONE_CACHE_HITS.labels(cloud).inc()
        view = self._view(cloud, known, operation_id)
        return Principal(kind="keystone", actor=f"keystone:{cloud}:{known.info.user_id}", view=view)

    async def principal(self, token: str, cloud_hint: str | None, operation_id: str) -> Principal:
        """The caller of a keystone token, or a 401/403/503 problem."""
        token = token.strip()
        if not token or len(token) > MAX_TOKEN_CHARS or not token.isascii() or not token.isprintable():
            raise refused("malformed", "the keystone token is malformed")
        cloud = self._cloud(cloud_hint)
        known = await self._known_token(cloud, token)
        view = self._view(cloud, known, operation_id)
        return Principal(kind="keystone", actor=f"keystone:{cloud}:{known.info.user_id}", view=view)


def _key(cloud: str, token: str) -> str:
    return hashlib.sha256(f"{cloud}\0{token}".encode()).hexdigest()


def keystone_tokens(settings: Settings) -> KeystoneTokens | None:
    """The clouds of the clouds config that take keystone tokens, or None when none does.
    Raises ``PolicyFileError``, ``CloudsConfigError`` or ``RunAborted`` (clouds.yaml) at start."""
    policy = TallyPolicy(settings.reporting_policy_file)
    path: Path | None = settings.reporting_clouds_config
    entries = load_clouds_config(path) if path is not None else ()
    checkers = {
        e.cloud: TokenChecker(
            resolve_cloud(e.keystone_os_cloud), timeout_s=settings.reporting_keystone_timeout_s
        )
        for e in entries
        if e.keystone_os_cloud is not None
    }
    if not checkers:
        return None
    return KeystoneTokens(checkers, policy, cache_s=settings.reporting_keystone_cache_s)
