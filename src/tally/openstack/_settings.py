"""The openstack adapter's own settings (``adapter_config`` of a clouds config entry), parsed strictly.

Two keys: ``os_cloud`` (required, the clouds.yaml entry) and ``include_octavia``
(default false). A key the adapter does not know is refused with the key named,
so a misspelt ``include_octavia`` is learnt instead of silently syncing without
load balancers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KEYS = ("os_cloud", "include_octavia")


class AdapterConfigError(ValueError):
    """adapter_config cannot be used; the text names the setting."""


@dataclass(frozen=True, slots=True)
class OpenStackSettings:
    os_cloud: str
    include_octavia: bool = False


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
    include_octavia = config.get("include_octavia", False)
    if not isinstance(include_octavia, bool):
        raise AdapterConfigError('setting "include_octavia" must be true or false')
    return OpenStackSettings(os_cloud, include_octavia)
