"""Which way the arrows point: the layering rules an import graph can check.

Read from the source with ``ast``, as the cycle check does (``test_import_graph``): an import inside a
function or under ``TYPE_CHECKING`` counts. Each rule has a test that its check finds a violation.
"""

from __future__ import annotations

from collections.abc import Mapping

from test_import_graph import module_graph, package_of

#: The packages that may import ``tally.http``: the daemon composes the front end; the simulator's
#: harness serves the fake cloud and registers projects; the collector's standalone command serves its
#: own health endpoints (until one composition root builds every process, issue 24).
HTTP_IMPORTERS = frozenset({"tally.daemon", "tally.simulator", "tally.collector"})


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


def test_no_production_package_imports_the_simulator() -> None:
    assert importers_of(module_graph(), "tally.simulator") == set()


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
    }
    assert importers_of(graph, "tally.http") == {"tally.store._sql"}
    assert importers_of(graph, "tally.simulator") == {"tally.reconcile._run"}
    assert importers_of(graph, "tally.openstack") == {"tally.reconcile._run"}
    assert private_reaches(graph) == {("tally.store._sql", "tally.http._auth")}
