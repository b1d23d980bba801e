"""Each consumer of the store takes the narrowest of its roles, never the whole ``Store``.

``tally.store`` cuts its interface into roles (``SchemaRole``, ``EventsRole``, ``BillingRole``, ...;
docs/architecture.md, "The store's roles"); ``Store`` is all of them. A function that annotates a
parameter, or a class a field, with ``Store`` outside the store and the composition root
(``tally.app``) claims every role, and a reader can no longer tell from its signature what it reads
or writes. It takes the role it uses, or a small protocol of the two or three it uses, defined next
to it; the full store passes where either is asked for, since the protocols are structural.

Read with ``ast`` (no module is imported), as the other checks here: a ``Store`` anywhere in the
annotation counts (``Store | None``, ``list[Store]``, a string annotation), under whatever name the
module imported it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from test_import_graph import ROOT, SRC, package_of

#: The packages whose modules may take the whole store: the store itself, and the composition root,
#: which builds every part from the one open store.
WHOLE_STORE_PACKAGES = frozenset({"tally.store", "tally.app"})

#: The holders outside those packages that keep the whole store, each with why: the places that hand
#: the one open store on to several parts, or to the composition root's builders (which take ``Store``).
WHOLE_STORE_HOLDERS = {
    ("tally.daemon._backbone", "Backbone.store"): "the daemon's open store, every actor is built from it",
    ("tally.simulation.simulate", "_MonthRun.run.store"): "handed to tally.app's sync_service_of",
}


def _store_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names ``Store`` goes by in a module: bare names (``from tally.store import Store as S``),
    and the module names it is read through (``import tally.store as ts``: ``ts.Store``)."""
    bare, modules = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "tally.store" and not node.level:
            bare |= {a.asname or a.name for a in node.names if a.name == "Store"}
        elif isinstance(node, ast.ImportFrom) and node.module == "tally" and not node.level:
            modules |= {a.asname or a.name for a in node.names if a.name == "store"}
        elif isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "tally.store"}
    return bare, modules


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def _names_store(annotation: ast.expr, bare: set[str], modules: set[str]) -> bool:
    for node in ast.walk(annotation):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                inner = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                continue
            if _names_store(inner, bare, modules):
                return True
        if isinstance(node, ast.Name) and node.id in bare:
            return True
        if isinstance(node, ast.Attribute) and node.attr == "Store" and _dotted(node.value) in modules:
            return True
    return False


def _annotated(body: list[ast.stmt], scope: str) -> Iterator[tuple[str, ast.expr]]:
    """(holder, annotation) of each parameter and class-level field in ``body``, nested ones too;
    the holder is ``Class.method.param`` or ``Class.field``."""
    for node in body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    yield f"{scope}{node.name}.{item.target.id}", item.annotation
            yield from _annotated(node.body, f"{scope}{node.name}.")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, [a.vararg, a.kwarg])]
            for param in params:
                if param.annotation is not None:
                    yield f"{scope}{node.name}.{param.arg}", param.annotation
            yield from _annotated(node.body, f"{scope}{node.name}.")
        else:
            # Definitions under ``if TYPE_CHECKING:``, ``try:`` or ``with`` count too.
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ExceptHandler):
                    yield from _annotated(child.body, scope)
                elif isinstance(child, ast.stmt):
                    yield from _annotated([child], scope)


def whole_store_holders(source: str) -> list[str]:
    """The parameters and fields of ``source`` annotated with the whole ``Store``."""
    tree = ast.parse(source)
    bare, modules = _store_names(tree)
    if not bare and not modules:
        return []
    return [
        holder for holder, annotation in _annotated(tree.body, "") if _names_store(annotation, bare, modules)
    ]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def test_only_the_store_and_the_root_take_the_whole_store() -> None:
    found = set()
    for path in sorted(SRC.joinpath(ROOT).rglob("*.py")):
        module = _module_name(path)
        if package_of(module) in WHOLE_STORE_PACKAGES:
            continue
        found |= {(module, holder) for holder in whole_store_holders(path.read_text())}
    beyond = sorted(found - WHOLE_STORE_HOLDERS.keys())
    assert not beyond, f"take the narrowest store role (tally.store's *Role protocols), not Store: {beyond}"
    # An entry that no longer holds the whole store is a stale excuse.
    assert found >= WHOLE_STORE_HOLDERS.keys(), sorted(WHOLE_STORE_HOLDERS.keys() - found)


def test_the_check_finds_the_whole_store_however_it_is_named() -> None:
    source = """
from typing import TYPE_CHECKING
import tally.store as ts
from tally import store as st
from tally.store import EventsRole, Store, Store as S

if TYPE_CHECKING:
    def hidden(store: Store) -> None: ...

def narrow(store: EventsRole, other: "EventsRole") -> None: ...
def plain(store: Store) -> None: ...
def optional(*, store: S | None = None) -> None: ...
def dotted(store: ts.Store, more: st.Store) -> None: ...
def quoted(store: "list[Store]") -> None: ...
def returns() -> Store: ...

class Holder:
    store: Store
    role: EventsRole

    def method(self, store: EventsRole, *stores: Store) -> None:
        def inner(store: Store) -> None: ...
"""
    assert whole_store_holders(source) == [
        "hidden.store",
        "plain.store",
        "optional.store",
        "dotted.store",
        "dotted.more",
        "quoted.store",
        "Holder.store",
        "Holder.method.stores",
        "Holder.method.inner.store",
    ]
    # A module that never imports the store's ``Store`` takes none, whatever its names.
    assert whole_store_holders("class Store: ...\ndef f(store: Store) -> None: ...\n") == []
