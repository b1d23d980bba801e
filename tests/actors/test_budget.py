"""Budget: cancels the work on time and says which step it was on."""

from __future__ import annotations

import anyio
import pytest

from tally.actors import Budget, BudgetExceeded

pytestmark = pytest.mark.anyio


async def test_budget_cancels_on_time_and_reports_the_step() -> None:
    steps: list[str] = []
    began = anyio.current_time()
    with pytest.raises(BudgetExceeded) as info, Budget(0.2) as budget:
        budget.doing("authenticating")
        await anyio.sleep(0.05)
        steps.append("authenticated")
        budget.doing("enumerating servers")
        await anyio.sleep(10)
        steps.append("never reached")
    took = anyio.current_time() - began
    assert str(info.value) == "budget of 0.2s exceeded while enumerating servers"
    assert info.value.doing == "enumerating servers"
    assert isinstance(info.value, TimeoutError)
    assert steps == ["authenticated"]
    assert 0.2 <= took < 1.0


async def test_work_within_budget_is_untouched() -> None:
    with Budget(5) as budget:
        budget.doing("quick step")
        await anyio.sleep(0.01)
        assert 0 < budget.remaining() < 5
    assert budget.current_step == "quick step"


async def test_outer_cancellation_is_not_reported_as_budget() -> None:
    with anyio.move_on_after(0.05) as outer:
        with Budget(10) as budget:
            budget.doing("waiting")
            await anyio.sleep(10)
    assert outer.cancelled_caught


async def test_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        Budget(0)
