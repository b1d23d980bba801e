"""The creation instants the fake cloud reports for a world's resources, as a sync reads them.

A ``sync.create`` is dated at the platform's creation instant, which lies ahead of the oracle's
start (nova's ``created`` is the API request, cinder's ``created_at`` precedes ``creating``) and
is written at each service's precision: cinder to the microsecond, nova, neutron, glance and
octavia to the second. The compare accepts a create correction dated exactly there. Pure.
"""

from __future__ import annotations

from datetime import datetime

from .world import World

_MICROSECONDS = frozenset({"volume"})


def platform_created(world: World) -> dict[tuple[str, str], datetime]:
    """Every resource's creation instant as its service's listing writes it."""
    out: dict[tuple[str, str], datetime] = {}
    for r in world.resources:
        at = r.created_at if r.resource_type in _MICROSECONDS else r.created_at.replace(microsecond=0)
        out[(r.resource_type, r.resource_id)] = at
    return out
