"""Which way the arrows point: the layering rules an import graph can check.

Read from the source with ``ast``, as the cycle check does (``test_import_graph``): an import inside a
function or under ``TYPE_CHECKING`` counts. Each rule has a test that its check finds a violation.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

from test_import_graph import SRC, module_graph, package_of

#: The packages that may import ``tally.http``: the daemon composes the front end; the simulation
#: harness serves the fake cloud; the command line (``tally.cli``) serves the standalone collector's
#: health endpoints, checks the policy file before ``tally run`` starts, and prints the policy's
#: defaults.
HTTP_IMPORTERS = frozenset({"tally.daemon", "tally.simulation", "tally.cli"})

#: The packages that may import the simulator library (``tally.simulator``): the harness that drives
#: it and the command line. No production package does.
SIMULATOR_IMPORTERS = frozenset({"tally.cli", "tally.simulation"})

#: The packages that may import the simulation harness (``tally.simulation``): the command line only.
SIMULATION_IMPORTERS = frozenset({"tally.cli"})

#: What the simulator library may import besides itself: the core, and the collector's facade for
#: the mapping (the names it takes from ``_mapping`` and ``_outcome``, see ``mapping_names``).
LIBRARY_REACH = frozenset({"tally.core", "tally.collector"})


def importers_of(graph: Mapping[str, set[str]], package: str) -> set[str]:
    """The modules outside ``package`` that import it or one of its modules."""
    return {
        module
        for module, targets in graph.items()
        if package_of(module) != package and any(package_of(t) == package for t in targets)
    }


def private_reaches(graph: Mapping[str, set[str]]) -> set[tuple[str, str]]:
    """(module, target) where a module imports another package's private module (a ``_name`` part)."""
    found = set()
    for module, targets in graph.items():
        for target in targets:
            private = any(p.startswith("_") and not p.startswith("__") for p in target.split(".")[2:])
            if private and package_of(target) != package_of(module):
                found.add((module, target))
    return found


def library_reaches(graph: Mapping[str, set[str]]) -> set[tuple[str, str]]:
    """(module, package) where a simulator library module imports a package beyond ``LIBRARY_REACH``."""
    return {
        (module, package_of(target))
        for module, targets in graph.items()
        if package_of(module) == "tally.simulator"
        for target in targets
        if package_of(target) not in LIBRARY_REACH | {"tally.simulator"}
    }


def names_from(sources: Mapping[str, str], package: str, module: str) -> set[tuple[str, str]]:
    """(importer, name) for every ``from <module> import name`` in the sources of ``package``."""
    found = set()
    for importer, text in sources.items():
        if package_of(importer) != package:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == module:
                found.update((importer, a.name) for a in node.names)
    return found


def mapping_names(facade: str) -> set[str]:
    """The names the collector's facade re-exports from its mapping and the mapping's outcomes."""
    return {
        a.asname or a.name
        for node in ast.walk(ast.parse(facade))
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module in {"_mapping", "_outcome"}
        for a in node.names
    }


def _sources(package: str) -> dict[str, str]:
    root = SRC / Path(*package.split("."))
    return {_dotted(p): p.read_text() for p in root.rglob("*.py")}


def _dotted(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _beyond(found: Iterable[tuple[str, str]], allowed: set[str]) -> list[tuple[str, str]]:
    return sorted((importer, name) for importer, name in found if name not in allowed)


def test_no_production_package_imports_the_simulator() -> None:
    graph = module_graph()
    packages = {package_of(m) for m in importers_of(graph, "tally.simulator")}
    assert packages <= SIMULATOR_IMPORTERS, sorted(packages - SIMULATOR_IMPORTERS)
    harness = {package_of(m) for m in importers_of(graph, "tally.simulation")}
    assert harness <= SIMULATION_IMPORTERS, sorted(harness - SIMULATION_IMPORTERS)


def test_the_simulator_library_imports_the_core_and_the_collector_mapping_only() -> None:
    """Never the store, ingest, reconcile, http, the composition root or the harness: those are the
    harness's (``tally.simulation``); from the collector only what its mapping offers."""
    assert sorted(library_reaches(module_graph())) == []
    facade = (SRC / "tally" / "collector" / "__init__.py").read_text()
    taken = names_from(_sources("tally.simulator"), "tally.simulator", "tally.collector")
    assert _beyond(taken, mapping_names(facade)) == []


def test_no_production_package_imports_the_test_infrastructure() -> None:
    """The broker and database nodes (``tally.testing``) are started by tests and benches only."""
    assert importers_of(module_graph(), "tally.testing") == set()


def test_only_the_top_imports_http() -> None:
    packages = {package_of(m) for m in importers_of(module_graph(), "tally.http")}
    assert packages <= HTTP_IMPORTERS, sorted(packages - HTTP_IMPORTERS)


def test_reconcile_never_imports_openstack() -> None:
    """The sync engine knows an adapter's protocol; the OpenStack adapter is handed to it."""
    graph = module_graph()
    reach = {m for m in importers_of(graph, "tally.openstack") if package_of(m) == "tally.reconcile"}
    assert reach == set()


def test_nobody_reaches_into_another_packages_private_module() -> None:
    assert sorted(private_reaches(module_graph())) == []


def test_the_checks_find_what_they_look_for() -> None:
    graph = {
        "tally.store._sql": {"tally.http._auth", "tally.core"},
        "tally.reconcile._run": {"tally.openstack", "tally.simulator.world"},
        "tally.http._auth": {"tally.http._routes"},
        "tally.daemon._startup": {"tally.testing.pg_node"},
        "tally.testing.rabbit_node": {"tally.core"},
        "tally.simulator.oracle": {"tally.store", "tally.core", "tally.simulator.world"},
        "tally.simulator.files": {"tally.collector", "tally.simulation.publisher"},
        "tally.store._pg": {"tally.simulation"},
    }
    assert importers_of(graph, "tally.http") == {"tally.store._sql"}
    assert importers_of(graph, "tally.simulator") == {"tally.reconcile._run"}
    assert importers_of(graph, "tally.simulation") == {"tally.simulator.files", "tally.store._pg"}
    assert library_reaches(graph) == {
        ("tally.simulator.oracle", "tally.store"),
        ("tally.simulator.files", "tally.simulation"),
    }
    assert importers_of(graph, "tally.openstack") == {"tally.reconcile._run"}
    assert importers_of(graph, "tally.testing") == {"tally.daemon._startup"}
    assert private_reaches(graph) == {("tally.store._sql", "tally.http._auth")}


def test_the_mapping_check_finds_a_name_beyond_the_mapping() -> None:
    facade = "from ._mapping import map_notification as map_notification\nfrom ._outcome import Mapped\n"
    facade += "from ._bus import InProcessBus as InProcessBus\n"
    sources = {
        "tally.simulator.files": "from tally.collector import Mapped, map_notification\n",
        "tally.simulator.publisher": "from tally.collector import InProcessBus\n",
        "tally.cli.collector": "from tally.collector import InProcessBus\n",
    }
    taken = names_from(sources, "tally.simulator", "tally.collector")
    assert mapping_names(facade) == {"map_notification", "Mapped"}
    assert _beyond(taken, mapping_names(facade)) == [("tally.simulator.publisher", "InProcessBus")]
