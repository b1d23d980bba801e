"""What a price list can price: per resource type, its dimensions and the states Tally books.

A dimension is a member of a type's rules in the document (``vcpu_hour``) that names what the price
is per hour of: the resource's presence (``size`` None) or one numeric size member integrated over
time (``vcpus``, ``size_gb``). The units are FOCUS's ``PricingUnit``/``ConsumedUnit`` texts.

The states are those Tally's notification mapping produces (docs/collector.md): nova's ``stopped``
and ``shelved_offloaded`` are booked as ``shutoff`` and ``shelved``, so a price list may name
either, and both mean the same state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Dimension:
    """One priced quantity of a type: per hour of presence (``size`` None) or of a size member."""

    name: str
    size: str | None
    unit: str
    description: str


_PRESENCE = "Hours"

#: Resource type -> its dimensions by document member. ``flavor`` (instance) is priced per flavor
#: name in ``flavors`` and is per hour of presence.
DIMENSIONS: Final[Mapping[str, Mapping[str, Dimension]]] = {
    "instance": {
        "flavor": Dimension("flavor", None, _PRESENCE, "instance hours of flavor"),
        "vcpu_hour": Dimension("vcpu_hour", "vcpus", "vCPU-Hours", "instance vCPU hours"),
        "ram_gb_hour": Dimension("ram_gb_hour", "ram_gb", "GB-Hours", "instance RAM GB hours"),
        "disk_gb_hour": Dimension("disk_gb_hour", "disk_gb", "GB-Hours", "instance disk GB hours"),
    },
    "volume": {"gb_hour": Dimension("gb_hour", "size_gb", "GB-Hours", "volume GB hours")},
    "image": {"gb_hour": Dimension("gb_hour", "size_gb", "GB-Hours", "image GB hours")},
    "floating_ip": {"hour": Dimension("hour", None, _PRESENCE, "floating IP hours")},
    "loadbalancer": {
        "hour": Dimension("hour", None, _PRESENCE, "load balancer hours"),
        "listener_hour": Dimension(
            "listener_hour", "listeners", "Listener-Hours", "load balancer listener hours"
        ),
        "pool_hour": Dimension("pool_hour", "pools", "Pool-Hours", "load balancer pool hours"),
    },
}

_VOLUME_STATES = (
    "available in-use error error_deleting error_managing error_restoring error_backing-up "
    "error_extending maintenance awaiting-transfer creating attaching detaching deleting "
    "extending retyping reserved backing-up restoring-backup downloading uploading managing"
)

#: Resource type -> the states its lines may carry.
STATES: Final[Mapping[str, frozenset[str]]] = {
    "instance": frozenset({"active", "shutoff", "shelved", "paused", "suspended", "error", "soft_deleted"}),
    "volume": frozenset(_VOLUME_STATES.split()),
    "image": frozenset({"active", "deactivated"}),
    "floating_ip": frozenset({"active"}),
    "loadbalancer": frozenset({"active", "error"}),
}

#: Names nova gives a state that Tally's mapping books under another (stopped -> shutoff).
STATE_ALIASES: Final[Mapping[str, Mapping[str, str]]] = {
    "instance": {"stopped": "shutoff", "shelved_offloaded": "shelved"},
}
