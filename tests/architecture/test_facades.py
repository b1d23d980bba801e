"""A package's facade exports what other packages use; what only the tests use lives in test namespaces.

A facade (``src/tally/<package>/__init__.py``) is the surface the other production packages build on:
a name in its ``__all__`` that no module of another package imports (nor names as ``"module:Name"``,
the way ``tally.reconcile`` loads an adapter) is surface nobody holds. Names that only the tests need
come from a documented test namespace (``TEST_NAMESPACES``, listed in docs/architecture.md): no
production module imports one, and each of its names is imported by a test. Read with ``ast``, as the
other checks are.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from test_import_graph import SRC, package_of

TESTS = Path(__file__).resolve().parents[1]
ARCHITECTURE = SRC.parent / "docs" / "architecture.md"

#: The facades this check leaves out: the command line's and the daemon's are entry points (``main``
#: for ``tally/__main__.py``, the daemon's runner and sizing for the benches).
NOT_CHECKED = frozenset({"tally.cli", "tally.daemon"})

#: The public modules that re-export private names for the tests that check them one by one.
TEST_NAMESPACES = (
    "tally.actors.internals",
    "tally.collector.internals",
    "tally.config.internals",
    "tally.core.internals",
    "tally.http.internals",
    "tally.ingest.internals",
    "tally.openstack.internals",
    "tally.outbox.internals",
    "tally.rating.internals",
    "tally.reconcile.internals",
    "tally.reconcile.rules",
    "tally.store.internals",
    "tally.usage.internals",
)

_BY_NAME = re.compile(r"^(tally(?:\.\w+)+):(\w+)$")


def _dotted(path: Path, root: Path, prefix: str = "") -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return prefix + ".".join(parts)


def _sources(root: Path, prefix: str = "") -> dict[str, str]:
    return {_dotted(p, root, prefix): p.read_text() for p in root.rglob("*.py")}


def exports(text: str) -> list[str]:
    """The names a module lists in its ``__all__`` (none if it has no ``__all__``)."""
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return []


def _used(text: str) -> Iterator[tuple[str, str]]:
    """(module, name) for each name a source takes from a tally module: imported, or named as a string."""
    tree = ast.parse(text)
    bound: dict[str, str] = {}  # "tally.reconcile" as imported by ``import tally.reconcile``
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield from ((node.module, a.name) for a in node.names)
        elif isinstance(node, ast.Import):
            bound.update((a.name, a.name) for a in node.names if a.asname is None)
            bound.update((a.asname, a.name) for a in node.names if a.asname is not None)
        elif isinstance(node, ast.Constant) and (m := _BY_NAME.match(str(node.value))):
            yield m.group(1), m.group(2)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and (module := bound.get(ast.unparse(node.value))):
            yield module, node.attr


def importers(sources: Mapping[str, str]) -> dict[tuple[str, str], set[str]]:
    """(module, name) -> the source modules that take ``name`` from ``module``."""
    found: dict[tuple[str, str], set[str]] = {}
    for importer, text in sources.items():
        for used in _used(text):
            found.setdefault(used, set()).add(importer)
    return found


def unheld_exports(src: Mapping[str, str], skip: frozenset[str] = frozenset()) -> list[str]:
    """``package.name`` for each facade export that no module of another package takes."""
    users = importers(src)
    return sorted(
        f"{facade}.{name}"
        for facade, text in src.items()
        if facade.count(".") == 1 and facade not in skip
        for name in exports(text)
        if not any(package_of(user) != facade for user in users.get((facade, name), ()))
    )


def namespace_faults(
    src: Mapping[str, str], tests: Mapping[str, str], namespaces: tuple[str, ...]
) -> list[str]:
    """What is wrong with the test namespaces: a production importer, or a name no test takes."""
    in_src, in_tests = importers(src), importers(tests)
    faults = [
        f"{user} imports {module}"
        for (module, _), users in in_src.items()
        if module in namespaces
        for user in users
        if user != module
    ]
    faults += [
        f"{namespace}.{name} has no test"
        for namespace in namespaces
        for name in exports(src[namespace])
        if not in_tests.get((namespace, name))
    ]
    return sorted(faults)


def test_each_facade_exports_only_what_another_package_takes() -> None:
    assert unheld_exports(_sources(SRC), NOT_CHECKED) == []


def test_the_test_namespaces_serve_the_tests_only() -> None:
    assert namespace_faults(_sources(SRC), _sources(TESTS, "tests."), TEST_NAMESPACES) == []


def test_the_test_namespaces_are_documented() -> None:
    documented = ARCHITECTURE.read_text()
    assert [n for n in TEST_NAMESPACES if f"`{n}`" not in documented] == []


def test_the_checks_find_an_export_nobody_takes() -> None:
    src = {
        "tally.a": 'from ._m import f as f, g as g, h as h\n__all__ = ["f", "g", "h"]',
        "tally.a._m": "from tally.a import g  # its own package does not count",
        "tally.b._n": 'from tally.a import f\nLOADED = "tally.a:h"',
    }
    assert unheld_exports(src) == ["tally.a.g"]
    assert unheld_exports({**src, "tally.c": "import tally.a\ntally.a.g"}) == []


def test_the_checks_find_a_test_namespace_misused() -> None:
    src = {"tally.a.internals": '__all__ = ["f", "g"]', "tally.b._n": "from tally.a.internals import f"}
    tests = {"tests.a.test_f": "from tally.a.internals import f"}
    assert namespace_faults(src, tests, ("tally.a.internals",)) == [
        "tally.a.internals.g has no test",
        "tally.b._n imports tally.a.internals",
    ]
