"""The one error the development cloud raises: a thing that stopped it, named in one line."""

from __future__ import annotations


class DevcloudError(Exception):
    """What could not be done and where; the command prints it as its one line and exits 2."""
