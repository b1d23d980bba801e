"""What ``compare`` reads of a store: every resource's events in fold order and the cloud's sync runs.

The verdict rests on the runs (which run could book which correction), so a source that cannot
give them cannot be judged: the Reporting API serves lifecycles but no sync runs, and
``compare --api`` refuses for that reason (``API_REFUSAL``) rather than judge half-blind.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Final

import psycopg

from tally.store import Store, StoreError, open_store

from ._runs import SyncRunError, read_runs
from .compare import StoredRecord

API_REFUSAL: Final = (
    "--api cannot be judged: the Reporting API serves no sync runs, and the verdict rests on them; "
    "compare against the store with --store-url"
)


_SQLITE: Final = "sqlite:///"
_SQLITE_HEADER: Final = b"SQLite format 3\x00"


class StoredReadError(RuntimeError):
    """The store could not be read; the message says what."""


async def record_of_store(store: Store, cloud: str) -> StoredRecord:
    histories = {}
    for row in await store.resources_of_cloud(cloud):
        events = await store.lifecycle_events(row.key)
        histories[(row.key.resource_type, row.key.resource_id)] = tuple(events)
    return StoredRecord(histories, read_runs(await store.list_sync_runs(cloud)))


def _check_sqlite_file(url: str) -> None:
    """A compare reads a store and must not create one: the file must exist and be SQLite's."""
    path = Path(url[len(_SQLITE) :])
    if str(path) == ":memory:":
        raise StoredReadError("cannot read the store: an in-memory SQLite store holds nothing to compare")
    try:
        with path.open("rb") as handle:
            head = handle.read(len(_SQLITE_HEADER))
    except OSError as exc:
        raise StoredReadError(f"cannot read the store: {exc}") from None
    if head and head != _SQLITE_HEADER:
        raise StoredReadError(f"cannot read the store: {path} is not an SQLite database")


async def record_from_store_url(url: str, cloud: str) -> StoredRecord:
    """The record of ``cloud`` in the store at ``url``; a store that is missing, not a store, or not
    migrated raises :class:`StoredReadError` naming which."""
    if url.startswith(_SQLITE):
        _check_sqlite_file(url)
    # The pool logs each failed attempt to connect; the one line the compare prints says it all.
    logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)
    try:
        async with open_store(url) as store:
            status = await store.schema_status()
            if status.current == 0:
                raise StoredReadError(
                    "cannot read the store: it holds no tally schema (run tally migrate up)"
                )
            return await record_of_store(store, cloud)
    except SyncRunError as exc:
        raise StoredReadError(f"cannot read the store's sync runs: {exc}") from exc
    except (OSError, ValueError, StoreError, sqlite3.Error, psycopg.Error) as exc:
        raise StoredReadError(f"cannot read the store: {exc}") from exc
