"""The ingest pipeline's limits and the current-resources refresh, for the tests.

A documented test namespace (docs/architecture.md): the names here are re-exported from private
modules for the tests that check them one by one. No production package imports it
(tests/architecture/test_facades.py); production code takes ``tally.ingest``'s names from the package.
"""

from ._counted import refresh_current_resources as refresh_current_resources
from ._pipeline import MAX_EVENT_BYTES as MAX_EVENT_BYTES
from ._pipeline import SCOPE_VIOLATION as SCOPE_VIOLATION

__all__ = [
    "MAX_EVENT_BYTES",
    "SCOPE_VIOLATION",
    "refresh_current_resources",
]
