"""The simulator's console: the ETA of its progress lines, and the marking of its own faults' lines."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tally.simulation._console_log import ThrottledLine, eta_s, format_eta, simulator_logging


@given(
    st.integers(min_value=1, max_value=10**7),
    st.integers(min_value=0, max_value=10**7),
    st.floats(min_value=0.001, max_value=1e6),
)
def test_the_eta_is_the_remaining_share_of_the_time_so_far(done: int, extra: int, elapsed: float) -> None:
    eta = eta_s(done, done + extra, elapsed)
    assert eta is not None and eta >= 0
    assert eta == pytest.approx(elapsed * extra / done)
    assert eta_s(done + extra, done + extra, elapsed) == 0


def test_no_eta_before_a_rate_or_without_a_total() -> None:
    assert eta_s(0, 100, 5.0) is None
    assert eta_s(10, None, 5.0) is None
    assert format_eta(None) == "-"
    assert [format_eta(s) for s in (0, 59.6, 61, 3600, 3725)] == [
        "0:00",
        "1:00",
        "1:01",
        "1:00:00",
        "1:02:05",
    ]


def test_a_throttled_line_prints_the_first_update_and_the_final_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = ThrottledLine(lambda done, total, eta: f"done={done}/{total} eta={eta}", every_s=3600)
    line.update(1, 4)
    line.update(2, 4)  # within every_s: not printed
    line.update(4, 4, final=True)
    printed = capsys.readouterr().err.splitlines()
    assert printed[0].startswith("done=1/4 eta=")
    assert printed[1:] == ["done=4/4 eta=0:00"]


def test_warnings_under_injected_faults_are_marked_as_the_simulators(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with simulator_logging("drop=5,duplicate=3"):
        logging.getLogger("tally.reconcile._run").warning("sync failed cloud=%s", "os-sim")
        logging.getLogger("tally.simulator").info("not shown: below the handler's level")
    with simulator_logging(""):
        logging.getLogger("tally.reconcile._run").warning("sync failed cloud=%s", "os-real")
    assert capsys.readouterr().err.splitlines() == [
        "WARNING tally.reconcile._run sync failed cloud=os-sim "
        "[simulator: injected faults drop=5,duplicate=3]",
        "WARNING tally.reconcile._run sync failed cloud=os-real",
    ]
