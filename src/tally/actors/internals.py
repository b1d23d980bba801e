"""The supervisor's restart policy and state, for the tests.

A documented test namespace (docs/architecture.md): the names here are re-exported from private
modules for the tests that check them one by one. No production package imports it
(tests/architecture/test_facades.py); production code takes ``tally.actors``'s names from the package.
"""

from ._supervisor import Backoff as Backoff
from ._supervisor import Intensity as Intensity
from ._supervisor import Restart as Restart
from ._supervisor import SupervisorState as SupervisorState

__all__ = [
    "Backoff",
    "Intensity",
    "Restart",
    "SupervisorState",
]
