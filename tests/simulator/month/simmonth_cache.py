"""Months shared by the simulated-month tests: pure values, so each is generated once per session."""

from __future__ import annotations

from functools import cache

from tally.simulator import Month, generate_month

ALL_BUS_FAULTS = "missing-create,duplicates,reordering,refused-shapes,held-back,missing-delete,lost-update"


@cache
def july_with(faults: str = "") -> Month:
    """Seed 1, July 2026, scale 1, with the given faults."""
    return generate_month(1, "2026-07", faults=faults)
