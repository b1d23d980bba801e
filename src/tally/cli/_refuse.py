"""The command line's answer to bad input: one line on stderr naming the command, and exit 2."""

from __future__ import annotations

import sys


def fail(command: str, message: object) -> int:
    """``tally COMMAND: message`` on stderr (``tally: message`` when ``command`` is empty); exit 2."""
    prefix = f"tally {command}" if command else "tally"
    print(f"{prefix}: {message}", file=sys.stderr)
    return 2
