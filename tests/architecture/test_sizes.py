"""The size rule: no module of src/tally over 500 lines, no function over 80.

A module past 500 lines holds more than one job, a function past 80 more than one step; either is cut
where its jobs or steps part. Lines are counted as the file has them, a function from its ``def`` to its
last line (nested functions count inside their parent too, and are checked themselves), read with
``ast`` as the import checks are.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from test_import_graph import ROOT, SRC

MODULE_MAX_LINES = 500
FUNCTION_MAX_LINES = 80


def long_functions(source: str, limit: int = FUNCTION_MAX_LINES) -> Iterator[tuple[str, int]]:
    """(qualified name, lines) of each function or method of ``source`` longer than ``limit`` lines."""

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, int]]:
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}."
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                assert child.end_lineno is not None
                lines = child.end_lineno - child.lineno + 1
                if lines > limit:
                    yield name[:-1], lines
            yield from walk(child, name)

    yield from walk(ast.parse(source), "")


def modules() -> Iterator[tuple[str, str]]:
    for path in sorted(SRC.joinpath(ROOT).rglob("*.py")):
        yield str(path.relative_to(SRC)), path.read_text()


def test_no_module_over_500_lines() -> None:
    long = {name: len(text.splitlines()) for name, text in modules()}
    assert sorted((n, lines) for n, lines in long.items() if lines > MODULE_MAX_LINES) == []


def test_no_function_over_80_lines() -> None:
    found = [(name, function, lines) for name, text in modules() for function, lines in long_functions(text)]
    assert found == []


def test_the_checks_find_what_they_look_for() -> None:
    source = """
class A:
    async def long(self):
        a = 1
        b = 2
        return a + b

def outer():
    def inner():
        a = 1
        b = 2
        return a + b
    return inner

def short():
    return 1
"""
    assert dict(long_functions(source, limit=3)) == {"A.long": 4, "outer": 6, "outer.inner": 4}
