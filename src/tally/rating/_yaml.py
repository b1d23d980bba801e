"""Reading a price list's YAML without ever making a float or a datetime of it.

PyYAML's safe loader turns ``0.0125`` into a binary float, which cannot hold most decimal prices,
and ``2026-03-01T00:00:00Z`` into a datetime of its own rules. This loader keeps a float as a
``YamlFloat`` (its text, so the check can refuse it by name: money is a quoted string) and a
timestamp as its text (parsed by ``tally.core.parse_instant`` like every instant of Tally).
"""

from __future__ import annotations

from typing import Any

import yaml


class YamlFloat(str):
    """A YAML float as written: refused where money or a factor belongs."""


class _Loader(yaml.SafeLoader):
    """``SafeLoader`` with floats kept as ``YamlFloat`` and timestamps as text."""


def _float(loader: yaml.SafeLoader, node: yaml.Node) -> YamlFloat:
    return YamlFloat(loader.construct_scalar(node))  # type: ignore[arg-type]


def _text(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node))  # type: ignore[arg-type]


_Loader.add_constructor("tag:yaml.org,2002:float", _float)
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _text)


class YamlError(ValueError):
    """A document that is not YAML; the message names the line."""


def load_yaml(text: str) -> Any:
    """The document of ``text``, floats as ``YamlFloat`` and timestamps as text."""
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise YamlError(f"{where}not YAML: {problem}") from None
