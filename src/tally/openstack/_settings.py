"""The openstack adapter's own settings (``adapter_config`` of a clouds config entry), parsed strictly.

``os_cloud`` (required, the clouds.yaml entry) and one switch per optional service:
``include_cinder``, ``include_glance`` and ``include_neutron`` (default true) and
``include_octavia`` (default false). A service switched off is not asked anything: its
resource type is not enumerated (so the absence pass leaves that type's rows alone, as it
leaves load balancers alone without octavia), and without cinder the volume types are not
listed either. Real clouds without cinder, or with glance run by another party, exist; a
cloud whose catalog lacks a service the settings expect fails that type's enumeration on
every run, which is what tells the operator to switch it off.

A key the adapter does not know is refused with the key named, so a misspelt
``include_octavia`` is learnt instead of silently syncing without load balancers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

#: Per switch: its default, the catalog type of the service, and the resource type it lists.
OPTIONAL_SERVICES: Final = {
    "include_cinder": (True, "block-storage", "volume"),
    "include_glance": (True, "image", "image"),
    "include_neutron": (True, "network", "floating_ip"),
    "include_octavia": (False, "load-balancer", "loadbalancer"),
}
KEYS: Final = ("os_cloud", *OPTIONAL_SERVICES)


class AdapterConfigError(ValueError):
    """adapter_config cannot be used; the text names the setting."""


@dataclass(frozen=True, slots=True)
class OpenStackSettings:
    os_cloud: str
    include_octavia: bool = False
    include_cinder: bool = True
    include_glance: bool = True
    include_neutron: bool = True

    def includes(self, service: str) -> bool:
        """Whether the run asks the service of catalog type ``service`` (compute and identity: always)."""
        for key, (_, catalog_type, _) in OPTIONAL_SERVICES.items():
            if catalog_type == service:
                return bool(getattr(self, key))
        return True

    @property
    def resource_types(self) -> frozenset[str]:
        """The resource types a run enumerates: instances, and each included service's type."""
        included = (t for key, (_, _, t) in OPTIONAL_SERVICES.items() if getattr(self, key))
        return frozenset(("instance", *included))


def parse_adapter_config(config: Mapping[str, Any]) -> OpenStackSettings:
    """Validate ``adapter_config``; raises ``AdapterConfigError`` naming the offending setting."""
    for key in config:
        if key not in KEYS:
            raise AdapterConfigError(f'unknown setting "{key}"')
    os_cloud = config.get("os_cloud")
    if os_cloud is None:
        raise AdapterConfigError('setting "os_cloud" is required')
    if not isinstance(os_cloud, str) or not os_cloud.strip():
        raise AdapterConfigError('setting "os_cloud" must be a non-empty string')
    switches: dict[str, bool] = {}
    for key, (default, _, _) in OPTIONAL_SERVICES.items():
        value = config.get(key, default)
        if not isinstance(value, bool):
            raise AdapterConfigError(f'setting "{key}" must be true or false')
        switches[key] = value
    return OpenStackSettings(os_cloud, **switches)
