"""Naming sizes as the record is read: the stored size names of the clouds a read touches, and the
events of a read with their sizes named (``tally.core.named_size``).

Events are append-only, so one stored before its volume type's name was learnt keeps the id; every
read the record is folded or billed from names it, the same way ingest names an event that arrives
once the name is known. The listing of events as stored (``GET /api/v1/events``) is not such a read.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace

from tally.core import SizeNames, StoredEvent, name_event_size

from ._seam import Tx

NamesByCloud = Mapping[str, SizeNames]


async def size_names_of(tx: Tx, clouds: Collection[str] | None) -> dict[str, dict[tuple[str, str, str], str]]:
    """The size names of ``clouds`` (None: of every cloud), by cloud."""
    sql = "SELECT cloud, resource_type, member, value, name FROM size_names"
    params: list[str] = []
    if clouds is not None:
        if not clouds:
            return {}
        params = sorted(set(clouds))
        sql += f" WHERE cloud IN ({', '.join('?' for _ in params)})"
    out: dict[str, dict[tuple[str, str, str], str]] = {}
    for cloud, resource_type, member, value, name in await tx.fetchall(sql, params):
        out.setdefault(cloud, {})[(resource_type, member, value)] = name
    return out


def named(stored: StoredEvent, names: NamesByCloud) -> StoredEvent:
    """``stored`` with its size named by its cloud's names (itself when nothing changes)."""
    of_cloud = names.get(stored.event.cloud)
    if not of_cloud:
        return stored
    event = name_event_size(stored.event, of_cloud)
    return stored if event is stored.event else replace(stored, event=event)
