"""The roles cut ``Store`` into parts: each method of the interface is declared by exactly one role,
and ``Store`` adds only its lifetime (``aclose``). A method added to ``Store`` itself, or to two roles,
fails here: a consumer could not tell which role to take for it."""

from __future__ import annotations

import inspect
from itertools import combinations

import tally.store
from tally.store import Store

ROLES = {
    name: getattr(tally.store, name)
    for name in tally.store.__all__
    if name.endswith("Role") and name != "TokenRole"
}


def _declared(cls: type) -> set[str]:
    return {
        name for name, value in vars(cls).items() if not name.startswith("_") and inspect.isfunction(value)
    }


def _public_methods(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_") and inspect.isfunction(getattr(cls, name))}


def test_every_role_is_a_part_of_store() -> None:
    assert set(ROLES.values()) == {base for base in Store.__bases__ if base.__name__.endswith("Role")}
    assert len(ROLES) == 11


def test_each_method_of_store_is_declared_by_one_role() -> None:
    for (a, role_a), (b, role_b) in combinations(ROLES.items(), 2):
        assert not _declared(role_a) & _declared(role_b), (a, b)
    by_roles = set().union(*(_declared(role) for role in ROLES.values()))
    assert _declared(Store) == {"aclose"}
    assert _public_methods(Store) == by_roles | {"aclose"}
