"""A lock found held run after run: INFO while a live or hung holder may still free it, one WARNING
past the budget and the lease, the gauge counting for the alert, and a WARNING when it is free again."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import REGISTRY

from tally.reconcile._scheduler import HeldLockWatch


def _gauge(cloud: str) -> float | None:
    return REGISTRY.get_sample_value("tally_sync_lock_held_seconds", {"cloud": cloud})


def test_a_lock_held_past_the_threshold_is_warned_once_and_its_freeing_too(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [1000.0]
    watch = HeldLockWatch("os-held", 105.0, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="tally.reconcile._scheduler"):
        for step in range(12):  # a held lock seen every 15 s for 165 s
            watch.held()
            assert _gauge("os-held") == 15.0 * step
            now[0] += 15.0
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1
        assert warnings[0].startswith("sync lock held by another run for 105 s") and "os-held" in warnings[0]
        watch.free()
    assert _gauge("os-held") == 0
    last = caplog.records[-1]
    assert last.levelno == logging.WARNING and last.getMessage().startswith(
        "sync lock free again after 180 s"
    )


def test_holds_shorter_than_the_threshold_never_warn(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    watch = HeldLockWatch("os-turns", 105.0, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="tally.reconcile._scheduler"):
        for _ in range(20):  # replicas taking turns: held for a minute, then free
            for _ in range(4):
                watch.held()
                now[0] += 20.0
            watch.free()
            assert _gauge("os-turns") == 0
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
