"""At most a few warning lines a minute per kind of bad input, and the count of those left out.

A flood of bad messages must not drown the log or cost the loop its time: every one is still counted
in the metrics, but only the first ``per_window`` of a kind in each ``window_s`` are logged, and once
that window is over ``summary()`` hands the count of those left out for one line that says it (the
caller asks after each group of work). ``drain()`` hands the count of the window still open as well,
for the line a caller says when it stops, so that no left-out count is lost with the process.
``on_suppressed`` is called for each one left out (a metric's ``inc``), so that a flood shows between
the log's lines as well.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


def _nothing() -> None:
    return None


@dataclass
class LogLimit:
    """Invariant: ``logged`` <= ``per_window`` within the window that began at ``window_start``;
    ``suppressed`` counts the current window's left out, ``pending`` those of windows that are over."""

    per_window: int = 10
    window_s: float = 60.0
    clock: Callable[[], float] = time.monotonic
    on_suppressed: Callable[[], object] = _nothing
    window_start: float | None = None
    logged: int = 0
    suppressed: int = 0
    pending: int = 0

    def _roll(self, now: float) -> None:
        if self.window_start is None or now - self.window_start >= self.window_s:
            self.pending += self.suppressed
            self.suppressed = 0
            self.window_start = now
            self.logged = 0

    def allow(self) -> bool:
        """Whether to log this one; when not, it is counted as left out."""
        self._roll(self.clock())
        if self.logged < self.per_window:
            self.logged += 1
            return True
        self.suppressed += 1
        self.on_suppressed()
        return False

    def summary(self) -> int:
        """How many were left out in windows that are over (then counted from zero again)."""
        if self.window_start is not None:
            self._roll(self.clock())
        left_out, self.pending = self.pending, 0
        return left_out

    def drain(self) -> int:
        """How many were left out and not yet handed, the open window's included (for a last line)."""
        left_out = self.pending + self.suppressed
        self.pending = self.suppressed = 0
        return left_out
