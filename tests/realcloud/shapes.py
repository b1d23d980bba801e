"""The shape of an API answer, and the differences between two shapes, for the fake-versus-real check.

A shape keeps what a client depends on and drops the values: each member of an object with the JSON
type of its value (``null`` apart, so null versus a value and null versus absent both show), the
shape every element of a list shares, and the headers a client reads. Two answers differ where a
member is absent from one, or of another type; each difference is one line naming its path, so a
list of them reads as a change log of the fake.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Shape = Any


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def shape(value: Any) -> Shape:
    """Members with the shapes of their values; a list as the members its elements hold (the union)."""
    if isinstance(value, Mapping):
        return {str(k): shape(v) for k, v in value.items()}
    if isinstance(value, list):
        merged: dict[str, Any] = {}
        scalars: set[str] = set()
        for item in value:
            if isinstance(item, Mapping):
                for k, v in shape(item).items():
                    merged.setdefault(k, v)
            else:
                scalars.add(json_type(item))
        return [merged] if merged else sorted(scalars)
    return json_type(value)


def differences(real: Shape, fake: Shape, path: str = "") -> list[str]:
    """Lines ``path: real X, fake Y`` where the fake's shape departs from the real one."""
    if isinstance(real, dict) and isinstance(fake, dict):
        out: list[str] = []
        for key in sorted(real.keys() | fake.keys()):
            where = f"{path}.{key}" if path else key
            if key not in fake:
                out.append(f"{where}: real {_name(real[key])}, fake absent")
            elif key not in real:
                out.append(f"{where}: real absent, fake {_name(fake[key])}")
            else:
                out.extend(differences(real[key], fake[key], where))
        return out
    if isinstance(real, list) and isinstance(fake, list):
        if real and fake and isinstance(real[0], dict) and isinstance(fake[0], dict):
            return differences(real[0], fake[0], f"{path}[]")
        if not real or not fake:
            return []  # an empty list says nothing of its elements
        return [] if set(real) == set(fake) else [f"{path}[]: real {real}, fake {fake}"]
    if _name(real) != _name(fake):
        return [f"{path}: real {_name(real)}, fake {_name(fake)}"]
    return []


def _name(value: Shape) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return str(value)


def header_shape(headers: Iterable[tuple[str, str]], names: Iterable[str]) -> dict[str, str]:
    """The headers ``names`` a client reads, present or not, with their values where a value is a
    protocol fact (a microversion, a content type) rather than data."""
    given = {k.lower(): v for k, v in headers}
    return {name: given.get(name.lower(), "absent") for name in names}
