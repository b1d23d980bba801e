"""The cyclic garbage collector while a run holds its cloud's objects: what it holds is frozen.

A run builds objects in proportion to its cloud and holds them to its end: the observation, the
projection's rows, the plan. CPython collects its oldest generation each time that generation grew by
a quarter, walking every object in it, so each such collection during a large run walks all that the
run holds again (docs/benchmarks.md, "sync", has the share of the CPU), and one of a million
resources holds the interpreter for seconds, which a starved host stretches towards the sync lock's
lease (its renewal thread waits for the interpreter too). ``gc.freeze`` moves every object alive
into a generation no collection walks, a splice of lists; a run freezes once each planning step has
built what it keeps (``settle``: the observation, the rows, the plan). Reference counting frees a
frozen object as any other; only a cycle that became garbage while frozen waits for the unfreeze,
which the last run of the process to end does (``holding``), so the objects of the process go back
to the collector between runs. Not per listing page: that froze the pages' transient cycles too and
the run's peak memory grew by half.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Runs of this process inside ``holding``: each settles, the last to end unfreezes.
_holders = 0


@contextmanager
def holding() -> Iterator[None]:
    """The block of a run that builds and holds its cloud's objects (see the module)."""
    global _holders
    _holders += 1
    try:
        yield
    finally:
        _holders -= 1
        if not _holders:
            gc.unfreeze()


def settle() -> None:
    """Freeze what is alive, while a run is ``holding``; outside one, nothing."""
    if _holders:
        gc.freeze()
