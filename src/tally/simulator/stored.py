"""What ``compare`` reads of a store: every resource's events in fold order and the cloud's sync runs.

The verdict rests on the runs (which run could book which correction), so a source that cannot
give them cannot be judged: the Reporting API serves lifecycles but no sync runs, and
``compare --api`` refuses for that reason (``API_REFUSAL``) rather than judge half-blind.
"""

from __future__ import annotations

from typing import Final

from tally.store import Store, open_store

from ._runs import SyncRunError, read_runs
from .compare import StoredRecord

API_REFUSAL: Final = (
    "--api cannot be judged: the Reporting API serves no sync runs, and the verdict rests on them; "
    "compare against the store with --store-url"
)


class StoredReadError(RuntimeError):
    """The store could not be read; the message says what."""


async def record_of_store(store: Store, cloud: str) -> StoredRecord:
    histories = {}
    for row in await store.resources_of_cloud(cloud):
        events = await store.lifecycle_events(row.key)
        histories[(row.key.resource_type, row.key.resource_id)] = tuple(events)
    return StoredRecord(histories, read_runs(await store.list_sync_runs(cloud)))


async def record_from_store_url(url: str, cloud: str) -> StoredRecord:
    try:
        async with open_store(url) as store:
            return await record_of_store(store, cloud)
    except SyncRunError as exc:
        raise StoredReadError(f"cannot read the store's sync runs: {exc}") from exc
    except (OSError, ValueError) as exc:
        raise StoredReadError(f"cannot read the store: {exc}") from exc
