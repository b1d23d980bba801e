"""The OpenStack adapter: clouds.yaml, keystone, the admin-scope probe, paged listings, microversions,
and the check of a caller's keystone token (``TokenChecker``).

It implements ``tally.reconcile``'s adapter seam; the framework imports it by
name (adapter ``openstack`` of a clouds config entry).
"""

from ._adapter import OpenStackAdapter as OpenStackAdapter
from ._clouds_yaml import resolve_cloud as resolve_cloud
from ._connections import kept_connections as kept_connections
from ._token_check import KeystoneUnavailable as KeystoneUnavailable
from ._token_check import TokenChecker as TokenChecker
from ._token_check import TokenInfo as TokenInfo

__all__ = [
    "KeystoneUnavailable",
    "OpenStackAdapter",
    "TokenChecker",
    "TokenInfo",
    "kept_connections",
    "resolve_cloud",
]
