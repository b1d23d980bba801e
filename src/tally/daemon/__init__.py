"""The composition root: which actors run for the settings, signals, sd_notify; the ``tally`` command line."""
