"""The configuration's parsing and redaction steps, for the tests.

A documented test namespace (docs/architecture.md): the names here are re-exported from private
modules for the tests that check them one by one. No production package imports it
(tests/architecture/test_facades.py); production code takes ``tally.config``'s names from the package.
"""

from ._clouds import parse_clouds_config as parse_clouds_config
from ._load import unknown_variables as unknown_variables
from ._show import redact_url as redact_url

__all__ = [
    "parse_clouds_config",
    "redact_url",
    "unknown_variables",
]
