"""The collector's decode step and mapping table, for the tests.

A documented test namespace (docs/architecture.md): the names here are re-exported from private
modules for the tests that check them one by one. No production package imports it
(tests/architecture/test_facades.py); production code takes ``tally.collector``'s names from the package.
"""

from ._decode import MAX_BODY_BYTES as MAX_BODY_BYTES
from ._decode import decode_body as decode_body
from ._mapping import RULES as RULES
from ._outcome import Decoded as Decoded
from ._outcome import Unparseable as Unparseable

__all__ = [
    "MAX_BODY_BYTES",
    "RULES",
    "Decoded",
    "Unparseable",
    "decode_body",
]
