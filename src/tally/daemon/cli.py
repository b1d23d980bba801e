"""The ``tally`` command line: one entry point, subcommands contributed by each capability.

Each capability owns a ``commands`` module with ``register(subparsers)``; it adds
its subcommands there and sets ``handler`` on each parser to a function taking
the parsed namespace and returning the exit code (an ``async def`` handler is run
with anyio). Keeping the list here, rather than discovering modules, makes the
command surface explicit and cheap to import.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
from collections.abc import Sequence
from typing import Any

import anyio

from ._garbage import tune_garbage_collector

COMMAND_MODULES: tuple[str, ...] = (
    "tally.daemon.commands",
    "tally.http.commands",
    "tally.simulator.commands",
    "tally.simulator.run_commands",
    "tally.collector.commands",
    "tally.reconcile.commands",
    "tally.store.commands",
    "tally.usage.commands",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tally", description="Tally: the usage record of an OpenStack cloud."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Any = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    tune_garbage_collector()
    if inspect.iscoroutinefunction(handler):
        code = anyio.run(handler, args)
    else:
        code = handler(args)
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
