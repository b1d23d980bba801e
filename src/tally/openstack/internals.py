"""The OpenStack adapter's settings, clouds.yaml search and microversion pick, for the tests.

A documented test namespace (docs/architecture.md): the names here are re-exported from private
modules for the tests that check them one by one. No production package imports it
(tests/architecture/test_facades.py); production code takes ``tally.openstack``'s names from the package.
"""

from ._adapter import negotiate_microversion as negotiate_microversion
from ._clouds_yaml import clouds_yaml_locations as clouds_yaml_locations
from ._clouds_yaml import find_clouds_yaml as find_clouds_yaml
from ._clouds_yaml import warn_if_unpinned as warn_if_unpinned
from ._settings import AdapterConfigError as AdapterConfigError
from ._settings import OpenStackSettings as OpenStackSettings
from ._settings import parse_adapter_config as parse_adapter_config

__all__ = [
    "AdapterConfigError",
    "OpenStackSettings",
    "clouds_yaml_locations",
    "find_clouds_yaml",
    "negotiate_microversion",
    "parse_adapter_config",
    "warn_if_unpinned",
]
