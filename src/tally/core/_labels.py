"""Metric label values from known sets, so that what a caller sends cannot grow the series.

A label value is taken as it is only when it belongs to a set Tally knows in advance
(the event types the collector maps to and the reconciliation books, the states those
events carry) or that an operator registered (resource types, passed in by the
caller); anything else is counted under ``other``.
"""

from __future__ import annotations

from collections.abc import Container

OTHER = "other"

# The Tally event types of the notification mapping (spec notification-mapping.md); a test keeps
# this set equal to what the collector's mapping table produces.
MAPPED_EVENT_TYPES = frozenset(
    {
        "compute.instance.create.end",
        "compute.instance.delete.end",
        "compute.instance.resize.end",
        "compute.instance.resize.confirm.end",
        "compute.instance.resize.revert.end",
        "compute.instance.shelve",
        "compute.instance.unshelve",
        "compute.instance.power_off",
        "compute.instance.power_on",
        "volume.create.end",
        "volume.delete.end",
        "volume.resize.end",
        "volume.retype",
        "volume.transfer.accept.end",
        "floatingip.create.end",
        "floatingip.delete.end",
        "image.create",
        "image.delete",
        "octavia.loadbalancer.create.end",
        "octavia.loadbalancer.update.end",
        "octavia.loadbalancer.delete.end",
    }
)
# What a reconciliation run books (reconcile's Kind: create, update, delete).
CORRECTION_EVENT_TYPES = frozenset({"sync.create", "sync.update", "sync.delete"})
KNOWN_EVENT_TYPES = MAPPED_EVENT_TYPES | CORRECTION_EVENT_TYPES

# The states the mapped events carry (spec events.md): nova's vm_states as the mapping passes them
# through, cinder's volume statuses, and ``deleted`` after a delete.
KNOWN_STATES = frozenset(
    {
        "active",
        "building",
        "deleted",
        "error",
        "paused",
        "rescued",
        "shelved",
        "shutoff",
        "soft_deleted",
        "suspended",
        "attaching",
        "available",
        "awaiting-transfer",
        "backing-up",
        "creating",
        "deleting",
        "detaching",
        "downloading",
        "error_backing-up",
        "error_deleting",
        "error_extending",
        "error_restoring",
        "extending",
        "in-use",
        "maintenance",
        "reserved",
        "restoring-backup",
        "retyping",
        "uploading",
    }
)


def bounded(value: str, known: Container[str]) -> str:
    """``value`` when ``known`` holds it, else ``other``."""
    return value if value in known else OTHER
