"""One composition root: only ``tally.app`` builds the ingest pipeline, the sync service, the collector
and its sinks; the daemon, the commands, the simulator and the benches ask it for them.

Read with ``ast`` (no module is imported): a call of one of those classes, or of
``SyncService.from_settings``, anywhere in src/tally outside ``tally/app`` or in bench/ is a second
place where a choice the root makes (which sink, which pipeline settings, how many sync slots) could
be made differently. Tests build what they test as they need.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from test_import_graph import ROOT, SRC

BENCH = SRC.parent / "bench"
ROOT_PACKAGE = SRC / ROOT / "app"

#: The parts the root alone constructs.
PARTS = frozenset({"IngestPipeline", "SyncService", "Collector", "IngestSink", "HttpSink"})
#: Their constructors by another name.
FACTORIES = frozenset({("SyncService", "from_settings")})


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def constructions(source: str) -> Iterator[tuple[int, str]]:
    """(line, what) of each call in ``source`` that constructs one of the parts."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        called = _name(node.func)
        if called in PARTS:
            yield node.lineno, called
        elif isinstance(node.func, ast.Attribute) and (_name(node.func.value), node.func.attr) in FACTORIES:
            yield node.lineno, f"{_name(node.func.value)}.{node.func.attr}"


def _files() -> Iterator[Path]:
    yield from sorted(SRC.joinpath(ROOT).rglob("*.py"))
    yield from sorted(BENCH.rglob("*.py"))


def test_only_the_root_constructs_the_parts() -> None:
    found = [
        (str(path.relative_to(SRC.parent)), line, what)
        for path in _files()
        if ROOT_PACKAGE not in path.parents
        for line, what in constructions(path.read_text())
    ]
    assert found == []


def test_the_root_constructs_each_part() -> None:
    built = {what for path in ROOT_PACKAGE.rglob("*.py") for _, what in constructions(path.read_text())}
    assert built == PARTS | {"SyncService.from_settings"}


def test_the_check_finds_what_it_looks_for() -> None:
    source = """
from tally import ingest
pipeline = ingest.IngestPipeline(store, require_size_schema=False)
service = SyncService.from_settings(settings, store=store, pipeline=pipeline)
collector = Collector(settings, sink=IngestSink(pipeline))
other = InventoryCollector(world)
"""
    assert sorted(constructions(source)) == [
        (3, "IngestPipeline"),
        (4, "SyncService.from_settings"),
        (5, "Collector"),
        (5, "IngestSink"),
    ]
