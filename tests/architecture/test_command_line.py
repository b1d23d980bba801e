"""One command line: every command lives in ``tally.cli``, and no other package parses arguments.

Read from the source with ``ast``, as the cycle check does (``test_import_graph``): an ``argparse``
import inside a function counts, and so does a parser built without importing ``argparse`` (a
``register(subparsers)`` handed the parent's subparsers). Each rule has a test that its check finds a
violation.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from test_import_graph import ROOT, SRC, module_graph, package_of
from test_layering import importers_of

#: The calls that build a parser tree: a new parser, a level of subcommands, a subcommand.
PARSER_CALLS = frozenset({"ArgumentParser", "add_subparsers", "add_parser"})


def _sources() -> dict[str, str]:
    """Module name -> source, for every module of src/tally."""
    found = {}
    for path in SRC.joinpath(ROOT).rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path.read_text()
    return found


def argparse_importers(sources: Mapping[str, str]) -> set[str]:
    """The modules that import ``argparse`` or one of its names."""
    found = set()
    for module, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            if any(name.split(".")[0] == "argparse" for name in names):
                found.add(module)
    return found


def parser_builders(sources: Mapping[str, str]) -> set[str]:
    """The modules that call ``ArgumentParser``, ``add_subparsers`` or ``add_parser``, by any path."""
    found = set()
    for module, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in PARSER_CALLS:
                found.add(module)
    return found


def _outside_cli(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if package_of(m) != "tally.cli")


def test_only_the_command_line_imports_argparse() -> None:
    assert _outside_cli(argparse_importers(_sources())) == []


def test_only_the_command_line_builds_parsers() -> None:
    assert _outside_cli(parser_builders(_sources())) == []


def test_the_command_line_is_imported_by_the_entry_point_alone() -> None:
    """``python -m tally`` runs it; no capability reaches up into the commands."""
    assert importers_of(module_graph(), "tally.cli") <= {"tally.__main__"}


def test_the_checks_find_what_they_look_for() -> None:
    sources = {
        "tally.cli.usage": "import argparse\ndef register(sub):\n    sub.add_parser('usage')\n",
        "tally.store.commands": "def register(sub):\n    from argparse import Namespace\n",
        "tally.http.commands": "import argparse as ap\n",
        "tally.usage._period": "def register(subparsers):\n    p = subparsers.add_parser('period')\n",
        "tally.simulator.run": "import argparse\np = argparse.ArgumentParser()\np.add_subparsers()\n",
        "tally.core.argparsing": "from tally.core import parse\nparse_args = 1\n",
    }
    assert _outside_cli(argparse_importers(sources)) == [
        "tally.http.commands",
        "tally.simulator.run",
        "tally.store.commands",
    ]
    assert _outside_cli(parser_builders(sources)) == ["tally.simulator.run", "tally.usage._period"]
    graph = {"tally.daemon._run": {"tally.cli.daemon"}, "tally.__main__": {"tally.cli"}}
    assert importers_of(graph, "tally.cli") == {"tally.daemon._run", "tally.__main__"}
