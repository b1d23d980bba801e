"""A request's timeouts follow the run's budget (the enclosing cancel scope), with a sane connect."""

from __future__ import annotations

import pytest

from tally.actors import Budget
from tally.openstack._listing import BEYOND_BUDGET_S, CONNECT_TIMEOUT_S, UNBUDGETED_S, request_timeout

pytestmark = pytest.mark.anyio


async def test_a_request_may_wait_as_long_as_the_budget_has_left() -> None:
    with Budget(240.0):
        timeout = request_timeout()
    assert timeout.read is not None and 239.0 + BEYOND_BUDGET_S < timeout.read <= 240.0 + BEYOND_BUDGET_S
    assert timeout.connect == CONNECT_TIMEOUT_S


async def test_a_budget_nearly_spent_bounds_the_connect_too() -> None:
    with Budget(2.0):
        timeout = request_timeout()
    assert timeout.connect is not None and timeout.connect <= 2.0 + BEYOND_BUDGET_S


async def test_outside_a_budget_a_request_has_its_default() -> None:
    timeout = request_timeout()
    assert timeout.read == UNBUDGETED_S + BEYOND_BUDGET_S
    assert timeout.connect == CONNECT_TIMEOUT_S
