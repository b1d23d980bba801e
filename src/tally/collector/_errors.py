"""The collector's errors.

CollectorError          the collector cannot start or run as configured (names what and why)
"""

from __future__ import annotations


class CollectorError(RuntimeError):
    """A configuration or broker state the collector cannot run with; the message names it."""
