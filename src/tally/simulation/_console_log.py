"""What the simulator's commands print while they run: progress lines with an ETA, and log lines
that say which are the simulator's own doing.

``eta_s`` is the remaining time at the rate so far (None until there is a rate). ``ThrottledLine``
prints one progress line every few seconds off a terminal. ``simulator_logging`` routes warnings
and errors to stderr with their logger's name; with faults injected, each such line ends with
``[simulator: injected faults ...]``, because a sync that fails on an injected ``down=network``
logs the same words as one that fails for real, and an operator reading the run must tell them apart.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

LOG_EVERY_S = 5.0


def eta_s(done: int, total: int | None, elapsed_s: float) -> float | None:
    """Seconds left at the average rate so far; None before the first item or without a total."""
    if total is None or done <= 0 or elapsed_s <= 0:
        return None
    return max(0, total - done) * elapsed_s / done


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class ThrottledLine:
    """Prints ``render(done, total, eta)`` to stderr at most every ``every_s``, and once at the end."""

    def __init__(
        self, render: Callable[[int, int | None, str], str], *, every_s: float = LOG_EVERY_S
    ) -> None:
        self._render = render
        self._every_s = every_s
        self._began = time.monotonic()
        self._last = float("-inf")

    def update(self, done: int, total: int | None, *, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self._last < self._every_s:
            return
        self._last = now
        eta = format_eta(eta_s(done, total, now - self._began))
        print(self._render(done, total, eta), file=sys.stderr, flush=True)


class _MarkInjected(logging.Filter):
    def __init__(self, faults: str) -> None:
        super().__init__()
        self._suffix = f" [simulator: injected faults {faults}]"

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith("tally."):
            record.msg, record.args = record.getMessage() + self._suffix, None
        return True


@contextmanager
def simulator_logging(faults: str = "", *, level: int = logging.WARNING) -> Iterator[logging.Handler]:
    """Warnings and errors to stderr as ``LEVEL logger message`` for the block (marked with ``faults``)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    if faults:
        handler.addFilter(_MarkInjected(faults))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
