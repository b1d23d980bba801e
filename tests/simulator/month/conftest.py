"""Session fixtures of the simulated-month tests."""

from __future__ import annotations

import pytest
from simmonth_cache import ALL_BUS_FAULTS, july_with

from tally.simulator import Month


@pytest.fixture(scope="session")
def july() -> Month:
    return july_with("")


@pytest.fixture(scope="session")
def july_faulty() -> Month:
    return july_with(ALL_BUS_FAULTS)
