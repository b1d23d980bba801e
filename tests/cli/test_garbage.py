"""The process's garbage-collector policy: applied by the command line before any command runs."""

from __future__ import annotations

import gc
import subprocess
import sys

from tally.cli import tune_garbage_collector
from tally.cli._garbage import OLDER_THRESHOLD, YOUNG_THRESHOLD


def test_tuning_raises_the_thresholds() -> None:
    before = gc.get_threshold()
    try:
        tune_garbage_collector()
        assert gc.get_threshold() == (YOUNG_THRESHOLD, OLDER_THRESHOLD, OLDER_THRESHOLD)
    finally:
        gc.set_threshold(*before)


def test_the_command_line_applies_the_policy_before_the_command_runs() -> None:
    probe = (
        "import gc\n"
        "from tally import cli\n"
        "seen = []\n"
        "parser = cli.build_parser()\n"
        "cli.build_parser = lambda *argv: parser\n"
        "parser.set_defaults(handler=lambda args: seen.append(gc.get_threshold()))\n"
        "cli.main([])\n"
        "print(*seen[0])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert tuple(map(int, out.stdout.split())) == (YOUNG_THRESHOLD, OLDER_THRESHOLD, OLDER_THRESHOLD)
