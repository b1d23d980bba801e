"""The OpenStack adapter: clouds.yaml, keystone, the admin-scope probe, paged listings, microversions,
and the check of a caller's keystone token (``TokenChecker``).

It implements ``tally.reconcile``'s adapter seam; the framework imports it by
name (adapter ``openstack`` of a clouds config entry).
"""

from ._adapter import OpenStackAdapter as OpenStackAdapter
from ._adapter import negotiate_microversion as negotiate_microversion
from ._clouds_yaml import ResolvedCloud as ResolvedCloud
from ._clouds_yaml import clouds_yaml_locations as clouds_yaml_locations
from ._clouds_yaml import find_clouds_yaml as find_clouds_yaml
from ._clouds_yaml import resolve_cloud as resolve_cloud
from ._clouds_yaml import warn_if_unpinned as warn_if_unpinned
from ._connections import kept_connections as kept_connections
from ._settings import AdapterConfigError as AdapterConfigError
from ._settings import OpenStackSettings as OpenStackSettings
from ._settings import parse_adapter_config as parse_adapter_config
from ._token_check import KeystoneUnavailable as KeystoneUnavailable
from ._token_check import TokenChecker as TokenChecker
from ._token_check import TokenInfo as TokenInfo

__all__ = [
    "AdapterConfigError",
    "KeystoneUnavailable",
    "OpenStackAdapter",
    "OpenStackSettings",
    "ResolvedCloud",
    "TokenChecker",
    "TokenInfo",
    "clouds_yaml_locations",
    "find_clouds_yaml",
    "kept_connections",
    "negotiate_microversion",
    "parse_adapter_config",
    "resolve_cloud",
    "warn_if_unpinned",
]
