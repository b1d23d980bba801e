"""The ``tally`` command line: one entry point, every command in this package.

Each command (or group of commands) is a module here with ``register(subparsers)``; it adds its
subcommands and sets ``handler`` on each parser to a function taking the parsed namespace and
returning the exit code (an ``async def`` handler is run with anyio). No other package parses
arguments: a handler calls the capabilities through their facades, and the commands that build a
store, a pipeline, a sync service, a collector or a sink ask the composition root (``tally.app``),
which sits below this package. Keeping the list here, rather than discovering modules, makes the
command surface explicit and cheap to import.

Only the module of the command being run is imported: importing them all (the
HTTP stack, the store drivers, the simulator) took seconds, so ``tally --help``
lists the commands from ``COMMANDS`` alone, and a process never defines the
metrics of a capability it does not run (the simulator's stay out of
``tally run``'s ``/metrics``). ``tests/daemon/test_cli.py`` checks that the
table names exactly what the modules register.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
from collections.abc import Sequence
from typing import Any

from ._garbage import tune_garbage_collector

#: Top-level command -> (the module whose ``register`` adds it, the line ``tally --help`` shows).
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("tally.cli.daemon", "run the daemon: the actor tree the settings ask for"),
    "config": ("tally.cli.daemon", "inspect the settings"),
    "token": ("tally.cli.tokens", "API tokens of the Reporting API"),
    "ingest-credential": ("tally.cli.tokens", "ingest credentials of POST /api/v1/events"),
    "policy-defaults": ("tally.cli.tokens", "print the keystone-token policy's default rules"),
    "simulator": ("tally.cli.simulator", "the simulated month and its fake OpenStack cloud"),
    "simulate": (
        "tally.cli.simulate",
        "run a simulated month through the whole pipeline and compare it with its oracle",
    ),
    "collector": ("tally.cli.collector", "consume oslo notifications into the outbox and deliver them"),
    "sync": ("tally.cli.sync", "run one sync of a configured cloud and print its answer"),
    "check-cloud": ("tally.cli.check_cloud", "check the account a cloud's clouds.yaml entry names"),
    "migrate": ("tally.cli.migrate", "apply, roll back or show the database migrations"),
    "usage": ("tally.cli.usage", "export metered usage of a window (CSV or JSON)"),
    "price-list": ("tally.cli.price_list", "check, load and list price lists"),
    "period": ("tally.cli.usage", "close, correct, list and show billing periods"),
}
COMMAND_MODULES: tuple[str, ...] = tuple(dict.fromkeys(module for module, _ in COMMANDS.values()))


def version() -> str:
    """The installed distribution's version (``pip install`` / the wheel's metadata)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("tally")
    except PackageNotFoundError:
        return "unknown (not installed)"


class _VersionAction(argparse.Action):
    """``--version``, reading the metadata only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print(f"tally {version()}")
        parser.exit()


def _command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option (the top level has no
    option taking a value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for ``argv``: the real subcommands of the command it names (every command's when
    ``argv`` is None), one-line stand-ins for the others so that the help lists them all."""
    parser = argparse.ArgumentParser(
        prog="tally", description="Tally: the usage record of an OpenStack cloud."
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = COMMAND_MODULES if argv is None else ()
    if argv is not None and (command := _command_of(argv)) in COMMANDS:
        wanted = (COMMANDS[command][0],)
    for name in wanted:
        importlib.import_module(name).register(subparsers)
    for command, (_, summary) in COMMANDS.items():
        if command not in subparsers.choices:
            subparsers.add_parser(command, help=summary)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (the process's arguments when None), run the command's handler, return its exit code."""
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(words)
    args = parser.parse_args(words)
    handler: Any = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    tune_garbage_collector()
    from prometheus_client import disable_created_metrics

    # A `_created` series per counter child doubles what a scrape carries and no panel reads it.
    disable_created_metrics()  # type: ignore[no-untyped-call]
    if inspect.iscoroutinefunction(handler):
        import anyio

        code = anyio.run(handler, args)
    else:
        code = handler(args)
    return int(code or 0)


__all__ = ["COMMANDS", "build_parser", "main", "tune_garbage_collector", "version"]
