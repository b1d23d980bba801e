"""The reconnect schedule: first attempt within 0.25 s, then jittered, bounded by what failed."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from tally.collector._amqp import FIRST_RETRY_S, REFUSED_MAX_S, UNREACHABLE_MAX_S, reconnect_delay


@given(st.integers(min_value=0, max_value=10_000), st.booleans(), st.integers())
def test_every_wait_is_within_its_bound(attempt: int, refused: bool, seed: int) -> None:
    delay = reconnect_delay(attempt, refused=refused, rng=random.Random(seed))
    if attempt == 0:
        assert 0 <= delay <= FIRST_RETRY_S
    else:
        ceiling = REFUSED_MAX_S if refused else UNREACHABLE_MAX_S
        bound = min(ceiling, FIRST_RETRY_S * 2.0 ** min(attempt, 16))
        assert bound / 2 <= delay <= bound


def test_an_unreachable_broker_is_tried_at_least_once_a_second_and_a_refusal_backs_off() -> None:
    rng = random.Random(1)
    unreachable = [reconnect_delay(n, refused=False, rng=rng) for n in range(40)]
    refused = [reconnect_delay(n, refused=True, rng=rng) for n in range(40)]
    assert max(unreachable) <= 1.0 and sum(unreachable) < 40
    assert max(refused[-10:]) > 30 and sum(refused) > 600


def test_collectors_that_lost_the_broker_together_do_not_come_back_in_step() -> None:
    waits = {round(reconnect_delay(3, refused=False, rng=random.Random(seed)), 3) for seed in range(50)}
    assert len(waits) > 40
