"""The core's fold and label pieces, for the tests.

A documented test namespace (docs/architecture.md): the names here are re-exported from private
modules for the tests that check them one by one. No production package imports it
(tests/architecture/test_facades.py); production code takes ``tally.core``'s names from the package.
"""

from ._fold import DELETED as DELETED
from ._fold import HISTORY_STARTS_WITHOUT_CREATE as HISTORY_STARTS_WITHOUT_CREATE
from ._fold import Lifecycle as Lifecycle
from ._fold import is_snapshot as is_snapshot
from ._fold import step as step
from ._labels import MAPPED_EVENT_TYPES as MAPPED_EVENT_TYPES
from ._usage import add_group_usage as add_group_usage

__all__ = [
    "DELETED",
    "HISTORY_STARTS_WITHOUT_CREATE",
    "MAPPED_EVENT_TYPES",
    "Lifecycle",
    "add_group_usage",
    "is_snapshot",
    "step",
]
