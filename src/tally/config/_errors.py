"""Configuration errors.

ConfigError    a setting or config file is malformed; the message is one line naming the
               variable (or file and key), the value (never a secret's) and what was expected
"""

from __future__ import annotations


class ConfigError(Exception):
    """A setting refuses startup; ``str(error)`` is the one line to show the operator."""
