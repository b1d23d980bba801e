"""What ``compare`` reads of a store: every resource's events in fold order and the cloud's sync runs.

From a store URL directly, or from a Reporting API: every resource of the cloud (deleted ones too),
each one's events off ``GET .../lifecycle``, and the runs off the admin-only
``GET /api/v1/sync-runs``. The verdict rests on the runs, so an API token that may not read them is
refused rather than judged half-blind.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any, Final, Protocol

import httpx
import psycopg

from tally.core import EventInvalid, InstantError, StoredEvent, parse_event, parse_instant, sorted_events
from tally.simulator import SyncRunError, read_runs
from tally.simulator.compare import StoredRecord
from tally.store import EventsRole, ProjectionRole, StoreError, SyncRecordsRole, open_store

PAGE: Final = 500


_SQLITE: Final = "sqlite:///"
_SQLITE_HEADER: Final = b"SQLite format 3\x00"


class StoredReadError(RuntimeError):
    """The store could not be read; the message says what."""


class RecordStore(ProjectionRole, EventsRole, SyncRecordsRole, Protocol):
    """What a compare reads of a store: the cloud's rows, each one's events, the cloud's sync runs."""


async def record_of_store(store: RecordStore, cloud: str) -> StoredRecord:
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


def _stored_event(wire: dict[str, Any]) -> StoredEvent:
    body = {k: v for k, v in wire.items() if k != "received_at"}
    event = parse_event(body)
    received = wire.get("received_at")
    return StoredEvent(event, parse_instant(received) if isinstance(received, str) else event.timestamp)


async def record_from_api(
    base_url: str, token: str | None, cloud: str, *, transport: httpx.AsyncBaseTransport | None = None
) -> StoredRecord:
    """The record of ``cloud`` as a Reporting API serves it; needs an admin token for the runs."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    kwargs: dict[str, Any] = {"transport": transport} if transport is not None else {}
    histories = {}
    async with httpx.AsyncClient(
        base_url=base_url.rstrip("/"), headers=headers, timeout=60.0, **kwargs
    ) as client:
        runs = await _get(client, "/api/v1/sync-runs", {"cloud": cloud})
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"cloud": cloud, "status": "all", "limit": PAGE}
            if cursor:
                params["cursor"] = cursor
            page = await _get(client, "/api/v1/resources", params)
            for item in page.get("items", []):
                rtype, rid = item["resource_type"], item["resource_id"]
                doc = await _get(client, f"/api/v1/resources/{cloud}/{rtype}/{rid}/lifecycle", None)
                try:
                    events = [_stored_event(e) for e in doc.get("events", [])]
                except (EventInvalid, InstantError) as exc:
                    raise StoredReadError(
                        f"{rtype} {rid}: an event the API served does not parse: {exc}"
                    ) from None
                histories[(rtype, rid)] = tuple(sorted_events(events))
            cursor = page.get("next_cursor")
            if not cursor:
                break
    try:
        return StoredRecord(histories, read_runs(runs.get("items", [])))
    except SyncRunError as exc:
        raise StoredReadError(f"cannot read the API's sync runs: {exc}") from exc


async def _get(client: httpx.AsyncClient, path: str, params: dict[str, Any] | None) -> dict[str, Any]:
    try:
        response = await client.get(path, params=params)
    except httpx.HTTPError as exc:
        raise StoredReadError(f"GET {path}: {exc}") from exc
    if response.status_code == 403 and path == "/api/v1/sync-runs":
        raise StoredReadError(f"GET {path}: HTTP 403: the sync runs the verdict rests on need an admin token")
    if not response.is_success:
        raise StoredReadError(f"GET {path}: HTTP {response.status_code}: {response.text.strip()[:200]}")
    doc: dict[str, Any] = response.json()
    return doc
