"""The import graph of src/tally has no cycle: between packages, nor between the modules of one.

Read with the stdlib ``ast`` (no module is imported), so an import under ``TYPE_CHECKING`` or inside a
function counts too: a cycle hidden there is still two modules that cannot be understood apart.
"""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = "tally"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """The tally modules a module imports, absolute, each as far as it is named."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            yield prefix
            yield from (f"{prefix}.{a.name}" for a in node.names)


def module_graph() -> dict[str, set[str]]:
    """Module -> the tally modules it imports (a ``from package import name`` names the package)."""
    files = {_module_name(p): p for p in SRC.joinpath(ROOT).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        targets = {t for t in _imported(tree, module, path.name == "__init__.py") if t in files}
        graph[module] = targets - {module}
    return graph


def package_of(module: str) -> str:
    """The top-level package under tally a module belongs to (tally.http._auth -> tally.http)."""
    return ".".join(module.split(".")[:2])


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return None


def test_the_packages_import_one_another_without_a_cycle() -> None:
    packages: dict[str, set[str]] = {}
    for module, targets in module_graph().items():
        packages.setdefault(package_of(module), set()).update(
            package_of(t) for t in targets if package_of(t) != package_of(module)
        )
    assert find_cycle(packages) is None


def test_the_modules_of_each_package_import_one_another_without_a_cycle() -> None:
    graph = module_graph()
    inner = {
        module: {t for t in targets if package_of(t) == package_of(module) and not _is_init_of(t, module)}
        for module, targets in graph.items()
    }
    assert find_cycle(inner) is None


def _is_init_of(target: str, module: str) -> bool:
    # A package's __init__ re-exports its modules; a module naming its own package's __init__ (for a
    # sibling's name) is how "from . import x" reads, not a cycle of the code.
    return module.startswith(target + ".")


def test_the_check_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"a"}, "c": set()}) in (["a", "b", "a"], ["b", "a", "b"])
    assert find_cycle({"a": {"b"}, "b": set()}) is None
