"""The composition root: which actors run for the settings, signals, sd_notify; the ``tally`` command line."""

from ._garbage import tune_garbage_collector

__all__ = ["tune_garbage_collector"]
