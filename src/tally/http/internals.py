"""The HTTP layer's keystone token cache and policy, for the tests.

A documented test namespace (docs/architecture.md): the names here are re-exported from private
modules for the tests that check them one by one. No production package imports it
(tests/architecture/test_facades.py); production code takes ``tally.http``'s names from the package.
"""

from ._keystone import KeystoneTokens as KeystoneTokens
from ._policy import TallyPolicy as TallyPolicy

__all__ = [
    "KeystoneTokens",
    "TallyPolicy",
]
