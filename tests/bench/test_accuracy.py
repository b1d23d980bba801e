"""bench.accuracy's pure parts: the modules its server preloads, the share of the cores the months kept
busy, and ``--quick`` failing below its floor of that share."""

from __future__ import annotations

import argparse
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bench.accuracy import Month, Span, cores_busy

from bench import accuracy


def test_every_preloaded_module_exists() -> None:
    # The forkserver skips a preload name that does not import, silently: a module moved away (the
    # simulator's split moved four) would be compiled again in every month without a word.
    missing = [name for name in accuracy.PRELOAD if importlib.util.find_spec(name) is None]
    assert missing == []


def _month(began: float, ended: float, cpu_s: float) -> Month:
    return Month(1, "2026-07", 0, Span(began, ended, cpu_s))


def test_cores_busy_is_the_months_cpu_over_the_cores_time() -> None:
    both_busy = [_month(0.0, 10.0, 10.0), _month(0.0, 10.0, 10.0)]
    assert cores_busy(both_busy, jobs=4, cores=2) == pytest.approx(1.0)
    # A month that waits half its wall leaves its core half idle.
    waiting = [_month(0.0, 10.0, 5.0), _month(0.0, 10.0, 5.0)]
    assert cores_busy(waiting, jobs=4, cores=2) == pytest.approx(0.5)
    # A core left without a month while the other runs counts as idle.
    one_after_other = [_month(0.0, 10.0, 10.0), _month(10.0, 20.0, 10.0)]
    assert cores_busy(one_after_other, jobs=4, cores=2) == pytest.approx(0.5)
    # With one month at a time, one core is all the runner may use.
    assert cores_busy(one_after_other, jobs=1, cores=2) == pytest.approx(1.0)


def test_cores_busy_without_spans_is_unknown() -> None:
    assert cores_busy([Month(1, "2026-07", -1, None)], jobs=2, cores=2) is None


def _passed_doc() -> dict[str, Any]:
    comparison = {
        "exact": 3,
        "tolerated": 0,
        "off": 0,
        "seconds_off": "0",
        "quantities": [],
        "billed_seconds": {},
    }
    return {"passed": True, "comparison": comparison, "syncs": {"run": 2, "idle_skipped": 0}}


def _fake_months(cpu_share: float) -> Any:
    def months(grid: list[tuple[int, str]], args: argparse.Namespace, workdir: Path) -> Iterator[Month]:
        for seed, period in grid:
            yield Month(seed, period, 0, Span(0.0, 10.0, 10.0 * cpu_share), _passed_doc())

    return months


@pytest.mark.parametrize(("cpu_share", "code"), [(0.9, 0), (accuracy.QUICK_BUSY_FLOOR / 2, 1)])
def test_quick_fails_below_its_floor_of_cores_busy(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], cpu_share: float, code: int
) -> None:
    monkeypatch.setattr(accuracy, "forked_months", _fake_months(cpu_share))
    monkeypatch.setattr(accuracy.os, "cpu_count", lambda: 2)
    assert accuracy.main(["--quick", "--price-list", ""]) == code
    out = capsys.readouterr().out
    assert "RATIO accuracy_cores_busy=" in out
    assert ("FAILED: the months kept" in out) == bool(code)


def test_the_full_matrix_is_not_held_to_the_quick_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(accuracy, "forked_months", _fake_months(accuracy.QUICK_BUSY_FLOOR / 2))
    assert accuracy.main(["--seeds", "1", "--periods", "2026-07", "--price-list", ""]) == 0
