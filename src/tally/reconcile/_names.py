"""Learning a cloud's size names: the adapter's listing (cinder's volume types) into the store.

Cinder's notifications carry a volume type's id where its listing carries the name, and the price
list keys volume types by name. The store replaces an id it knows the name of when an event arrives;
for an id it does not know yet, the name is written into the projection when it is learnt, and the
events are named when read. So the names are learnt as early as possible: by every run, after its
listings, and by each cloud's scheduler when it starts, before the first notification of the
process's life can need them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from tally.store import SizeName

from ._adapter import Adapter, Progress
from ._errors import SizeNamesFailed

log = logging.getLogger(__name__)


class NamesStore(Protocol):
    async def learn_size_names(self, cloud: str, rows: Sequence[SizeName]) -> list[SizeName]: ...


async def learn_size_names(adapter: Adapter, store: NamesStore, cloud: str, progress: Progress) -> str | None:
    """List the cloud's size names and store them; the reason it could not, else None.

    A failure changes nothing: the names an earlier listing stored stay, and events go on being named
    by them."""
    progress.phase = "listing the size names"
    try:
        names = await adapter.list_size_names(progress)
    except SizeNamesFailed as exc:
        return f"listing the size names of {cloud}: {exc}"
    learnt = await store.learn_size_names(
        cloud, [SizeName(cloud, n.resource_type, n.member, n.value, n.name) for n in names]
    )
    if learnt:
        log.info("size names learnt cloud=%s count=%d", cloud, len(learnt))
    return None
