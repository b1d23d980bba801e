"""Opening a store from its URL, and the one hash secrets are stored as."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ._interface import Store, UnsupportedStoreUrl
from ._pg_sync_lock import LEASE_S as SYNC_LOCK_LEASE_S
from ._postgres import PostgresStore
from ._sql import SqlStore
from ._sqlite import SqliteStore

_SQLITE = "sqlite:///"
_POSTGRES = ("postgresql://", "postgres://")


def hash_secret(secret: str) -> str:
    """The sha256 hex of a token or credential secret: the only form the store keeps."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def dialect_of(url: str) -> str:
    """``sqlite`` or ``postgresql`` for a store URL; ``UnsupportedStoreUrl`` naming the scheme otherwise."""
    if url.startswith(_SQLITE):
        return "sqlite"
    if url.startswith(_POSTGRES):
        return "postgresql"
    scheme = url.split(":", 1)[0] if ":" in url else url
    raise UnsupportedStoreUrl(
        f"store URL scheme {scheme!r} is not supported (use sqlite:/// or postgresql://)"
    )


@asynccontextmanager
async def open_store(
    url: str, *, max_conns: int = 10, sync_lock_lease_s: float = SYNC_LOCK_LEASE_S
) -> AsyncIterator[Store]:
    """Open the store ``url`` names for the block, closing its connections after.

    ``sqlite:///relative/path``, ``sqlite:////absolute/path`` or ``sqlite:///:memory:``;
    ``postgresql://user@host:port/db``. Migrations are not applied here: call
    ``migrate_up()`` (the daemon does at start unless told not to). ``sync_lock_lease_s`` is the
    PostgreSQL sync lock's lease (``_pg_sync_lock``).
    """
    store: SqlStore
    if dialect_of(url) == "sqlite":
        store = SqliteStore(url[len(_SQLITE) :])
    else:
        store = PostgresStore(url, max_conns=max_conns, sync_lock_lease_s=sync_lock_lease_s)
    await store.open()
    try:
        yield store
    finally:
        await store.aclose()
