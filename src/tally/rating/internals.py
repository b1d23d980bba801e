"""The rating's line arithmetic, FOCUS columns and price-list document, for the tests.

A documented test namespace (docs/architecture.md): the names here are re-exported from private
modules for the tests that check them one by one. No production package imports it
(tests/architecture/test_facades.py); production code takes ``tally.rating``'s names from the package.
"""

from ._focus import FOCUS_COLUMNS as FOCUS_COLUMNS
from ._price_list import price_list_document as price_list_document
from ._rate import billed_us as billed_us
from ._rate import line_cost as line_cost

__all__ = [
    "FOCUS_COLUMNS",
    "billed_us",
    "line_cost",
    "price_list_document",
]
