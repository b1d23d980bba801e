"""The virtual clock of a simulated month, and the publishing progress the control endpoint shows.

``virtual_now = base + (wall_now - base_wall) * factor``. A factor of 744 runs a
31-day month in about an hour. Factor 0 is the *told* mode: the instant stands
still until someone sets it with :meth:`VirtualClock.set`, which is how tests and
the stepped development loop move the world. :meth:`VirtualClock.rebase` changes
the factor without a jump: the new rate starts from the current virtual instant.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from tally.core import as_utc

MAX_FACTOR = 1_000_000.0


class ClockError(ValueError):
    """A factor or instant the clock cannot take; the message names the value."""


def _check_factor(factor: float) -> float:
    if isinstance(factor, bool) or not isinstance(factor, int | float):
        raise ClockError(f"factor must be a number, not {factor!r}")
    value = float(factor)
    if not math.isfinite(value) or value < 0 or value > MAX_FACTOR:
        raise ClockError(f"factor {factor!r} is outside 0..{MAX_FACTOR:g}")
    return value


class VirtualClock:
    """A clock running ``factor`` virtual seconds per wall second from ``base``.

    ``wall`` is a monotonic source in seconds (``time.monotonic`` unless a test gives another).
    """

    def __init__(
        self, base: datetime, factor: float = 0.0, *, wall: Callable[[], float] = time.monotonic
    ) -> None:
        self._wall = wall
        self._base = as_utc(base)
        self._base_wall = wall()
        self._factor = _check_factor(factor)

    @property
    def factor(self) -> float:
        return self._factor

    def now(self) -> datetime:
        """The virtual instant now."""
        if self._factor == 0.0:
            return self._base
        elapsed = (self._wall() - self._base_wall) * self._factor
        return self._base + timedelta(seconds=elapsed)

    def rebase(self, factor: float) -> None:
        """Continue from the current virtual instant at a new ``factor`` (0 stops the clock there)."""
        value = _check_factor(factor)
        self._base = self.now()
        self._base_wall = self._wall()
        self._factor = value

    def set(self, instant: datetime) -> None:
        """Jump to ``instant``; the clock keeps its factor from there."""
        self._base = as_utc(instant)
        self._base_wall = self._wall()


@dataclass
class PublishProgress:
    """What the publisher has done: updated by the publisher, read by ``GET /clock``.

    ``published`` notifications sent of ``total``; ``held`` withheld by the held-back fault;
    ``holding`` true while withheld ones wait for ``POST /release``.
    """

    published: int = 0
    total: int = 0
    held: int = 0
    holding: bool = False
