"""The period closer's correction step, for the tests.

A documented test namespace (docs/architecture.md): the names here are re-exported from private
modules for the tests that check them one by one. No production package imports it
(tests/architecture/test_facades.py); production code takes ``tally.usage``'s names from the package.
"""

from ._period_closer import REASON as REASON
from ._period_closer import close_and_correct as close_and_correct

__all__ = [
    "REASON",
    "close_and_correct",
]
