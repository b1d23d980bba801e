"""A cloud's grant kept across runs: its clouds.yaml entry resolved once per change, its keystone
session, token and catalog reused until the token is due.

A run used to resolve the entry through openstacksdk (tens of milliseconds of CPU) and authenticate
from nothing (a token POST and, for the generic plugins, keystone's version document), twice: for
the listings and for the size names. Every OpenStack client keeps its session's token until it
expires; so does the adapter now:

- the entry is resolved again only when what it was resolved from changed: the contents of
  clouds.yaml and of the secure.yaml and clouds-public.yaml beside it (compared by content: an
  mtime misses a rewrite within its tick), and the environment the resolution reads;
- the keystoneauth1 session and plugin built from it are kept with it, so the token and catalog
  serve every run until keystoneauth1 would renew them (``Grant.ensure``), keystone's version
  discovery is done once per plugin, and a token answered 401 is still replaced once
  (``Grant.reauthenticate``). After keystone refused a token the grant holds none: the next run
  asks keystone again.

A resolution or a session that fails is not kept: the next run tries again and says why.
"""

from __future__ import annotations

import os
import ssl
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import anyio
from keystoneauth1.session import Session

from ._clouds_yaml import ResolvedCloud, find_clouds_yaml, resolve_cloud
from ._keystone import Grant, build_session
from ._tls import CA_BUNDLE_VARIABLES

# Entries kept at most (least recently used dropped): well above any deployment's clouds.
MAX_HELD = 1024
# The environment a resolution or a session reads besides the files.
ENVIRONMENT = ("OS_CLIENT_CONFIG_FILE", "OS_REGION_NAME", "OS_INTERFACE", *CA_BUNDLE_VARIABLES)

Key = tuple[str, str, tuple[str | None, ...]]
Fingerprint = tuple[bytes | None, ...]


@dataclass(frozen=True, slots=True)
class _Held:
    fingerprint: Fingerprint
    grant: Grant


@dataclass(frozen=True, slots=True)
class _Found:
    """The grant kept for an entry, or a new resolution and session to wrap in one."""

    key: Key
    fingerprint: Fingerprint
    grant: Grant | None
    cloud: ResolvedCloud | None = None
    session: Session | None = None
    tls: ssl.SSLContext | None = None


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def fingerprint_of(path: Path) -> Fingerprint:
    """The contents a resolution of an entry of ``path`` reads (None for a file absent)."""
    beside = (path.with_name("secure.yaml"), path.with_name("clouds-public.yaml"))
    return tuple(_read(p) for p in (path, *beside))


class GrantCache:
    """The grants of the process, by entry."""

    def __init__(self, max_held: int = MAX_HELD) -> None:
        self._held: OrderedDict[Key, _Held] = OrderedDict()
        self._max_held = max_held
        self._mutex = threading.Lock()

    def _find(self, os_cloud: str) -> _Found:
        """The grant kept for the entry as its files read now, else only the key and fingerprint."""
        env = os.environ
        path = find_clouds_yaml(env, Path.cwd())
        key: Key = (os_cloud, str(path), tuple(env.get(name) for name in ENVIRONMENT))
        fingerprint = fingerprint_of(path)
        with self._mutex:
            held = self._held.get(key)
            if held is None or held.fingerprint != fingerprint:
                return _Found(key, fingerprint, None)
            self._held.move_to_end(key)
            return _Found(key, fingerprint, held.grant)

    @staticmethod
    def _resolve_blocking(os_cloud: str, found: _Found) -> _Found:
        cloud = resolve_cloud(os_cloud)
        session, tls = build_session(cloud)
        return _Found(found.key, found.fingerprint, None, cloud, session, tls)

    def _keep(self, found: _Found) -> Grant:
        assert found.cloud is not None and found.session is not None and found.tls is not None
        grant = Grant(found.cloud, found.session, found.tls)
        with self._mutex:
            self._held[found.key] = _Held(found.fingerprint, grant)
            self._held.move_to_end(found.key)
            while len(self._held) > self._max_held:
                self._held.popitem(last=False)
        return grant

    async def grant(self, os_cloud: str) -> Grant:
        """The grant of the clouds.yaml entry ``os_cloud`` with a current token; raises ``RunAborted``."""
        # On the event loop: a few small local files, read and compared in microseconds, where a
        # worker thread's round trip on a busy host takes milliseconds. openstacksdk's parse and the
        # session are built in a worker thread, as every blocking call of keystoneauth1 is.
        found = self._find(os_cloud)
        if found.grant is None:
            found = await anyio.to_thread.run_sync(
                self._resolve_blocking, os_cloud, found, abandon_on_cancel=True
            )
        grant = found.grant if found.grant is not None else self._keep(found)
        await grant.ensure()
        return grant

    def clear(self) -> None:
        with self._mutex:
            self._held.clear()


GRANTS = GrantCache()
