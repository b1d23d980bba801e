"""The ``tally`` command line itself: the command table, ``--version``, and a ``--help`` that is fast
because it imports no capability."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from importlib.metadata import version

from tally import cli


def test_the_table_names_exactly_what_the_modules_register() -> None:
    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    registered = {choice.dest: choice.help for choice in subparsers._choices_actions}
    assert registered == {command: summary for command, (_, summary) in cli.COMMANDS.items()}


def test_each_command_is_registered_by_the_module_the_table_names() -> None:
    for command, (module, _) in cli.COMMANDS.items():
        parser = cli.build_parser([command])
        subparsers = next(a for a in parser._actions if a.dest == "command")
        assert (
            subparsers.choices[command].get_default("handler") is not None
            or subparsers.choices[command]._subparsers is not None
        ), f"{command} is a stand-in, {module} did not register it"


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tally", *argv], capture_output=True, text=True, timeout=60)


def test_version_prints_the_installed_version() -> None:
    done = _run("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"tally {version('tally')}"


def test_help_answers_within_a_second_and_lists_every_command() -> None:
    times = []
    for _ in range(3):
        began = time.monotonic()
        done = _run("--help")
        times.append(time.monotonic() - began)
        assert done.returncode == 0, done.stderr
        for command in cli.COMMANDS:
            assert command in done.stdout
    assert statistics.median(times) < 1.0, times


def test_a_command_imports_only_its_own_capability() -> None:
    probe = (
        "import sys\n"
        "from tally import cli\n"
        "cli.build_parser(['run'])\n"
        "print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('tally.')}))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "simulator" not in done.stdout and "http" not in done.stdout, done.stdout


def test_an_unknown_command_is_refused_with_exit_2() -> None:
    done = _run("frobnicate")
    assert done.returncode == 2
    assert "invalid choice: 'frobnicate'" in done.stderr
