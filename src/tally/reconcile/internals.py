"""The reconciliation's adapter seam, what a run returns, a cloud's health and the pacing, for the tests.

A documented test namespace (docs/architecture.md): the names here are re-exported from private
modules for the tests that check them one by one. No production package imports it
(tests/architecture/test_facades.py); production code takes ``tally.reconcile``'s names from the package.
"""

from ._adapter import ADAPTERS as ADAPTERS
from ._adapter import Adapter as Adapter
from ._cloud_health import CloudHealth as CloudHealth
from ._model import SyncOutcome as SyncOutcome
from ._pacing import default_max_concurrent as default_max_concurrent
from ._pacing import first_delay as first_delay
from ._pacing import stagger_offset as stagger_offset

__all__ = [
    "ADAPTERS",
    "Adapter",
    "CloudHealth",
    "SyncOutcome",
    "default_max_concurrent",
    "first_delay",
    "stagger_offset",
]
