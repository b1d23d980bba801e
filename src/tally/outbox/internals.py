"""The sinks' delivery results, for the tests.

A documented test namespace (docs/architecture.md): the names here are re-exported from private
modules for the tests that check them one by one. No production package imports it
(tests/architecture/test_facades.py); production code takes ``tally.outbox``'s names from the package.
"""

from ._sink import DeliveryResult as DeliveryResult
from ._sink import DeliveryStatus as DeliveryStatus
from ._sink import Refusal as Refusal

__all__ = [
    "DeliveryResult",
    "DeliveryStatus",
    "Refusal",
]
