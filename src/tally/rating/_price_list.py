"""The price list: a YAML document checked into typed models of ``Decimal`` prices, or refused.

A list names its ``currency`` (ISO 4217, whose minor unit a line's cost is rounded to) and its
``versions``; each version is in force from its ``effective_from`` instant until the next one's,
and prices per resource type and dimension (``_dimensions.DIMENSIONS``), with the factor each
state bills at and the granularity and minimum of a line. docs/invoicing.md is the schema.

Money is never a float: a price, factor or modifier is a quoted decimal string (``"0.0125"``) or a
YAML integer; a YAML float is refused by name, since ``0.1`` read as binary is not a tenth. Every
refusal is one ``PriceListError`` whose message starts with the member at fault
(``versions[1].types.instance.vcpu_hour: ...``). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from tally.core import InstantError, format_instant, parse_instant

from ._currency import MINOR_UNITS
from ._dimensions import DIMENSIONS, STATE_ALIASES, STATES
from ._yaml import YamlError, YamlFloat, load_yaml

ROUNDING: Final = "half-up"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_TYPE_MEMBERS: Final = frozenset({"flavors", "type_modifiers", "states", "default_factor"})
_VERSION_MEMBERS: Final = frozenset({"effective_from", "granularity_seconds", "minimum_seconds", "types"})
_LIST_MEMBERS: Final = frozenset({"name", "currency", "rounding", "versions"})


class PriceListError(ValueError):
    """A price list refused; ``member`` is the path of the member at fault (``versions[0].types``)."""

    def __init__(self, member: str, why: str) -> None:
        super().__init__(f"{member}: {why}" if member else why)
        self.member = member


@dataclass(frozen=True, slots=True)
class TypeRules:
    """The prices of one resource type in one version.

    Invariant: ``prices`` names dimensions of ``DIMENSIONS[resource_type]`` other than ``flavor``;
    ``states`` and ``dimension_states`` name canonical states (aliases resolved), never the same
    one; every amount is a finite ``Decimal`` >= 0.
    """

    resource_type: str
    prices: Mapping[str, Decimal]
    flavors: Mapping[str, Decimal]
    type_modifiers: Mapping[str, Decimal]
    states: Mapping[str, Decimal]
    default_factor: Decimal
    # state -> dimension -> factor: a state billed on some dimensions only (a shelved instance's disk)
    dimension_states: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)

    def factor(self, state: str, dimension: str) -> Decimal:
        """The factor ``dimension`` bills at in ``state``: the state's own (for that dimension, or
        for all), else the type's default."""
        per_dimension = self.dimension_states.get(state)
        if per_dimension is not None:
            return per_dimension.get(dimension, self.default_factor)
        return self.states.get(state, self.default_factor)


@dataclass(frozen=True, slots=True)
class PriceVersion:
    """Prices in force from ``effective_from`` until the next version's instant."""

    effective_from: datetime
    granularity_seconds: int
    minimum_seconds: int
    types: Mapping[str, TypeRules]


@dataclass(frozen=True, slots=True)
class PriceList:
    """A checked price list. Invariant: ``versions`` ascend strictly by ``effective_from``."""

    name: str
    currency: str
    versions: tuple[PriceVersion, ...]

    @property
    def minor_unit(self) -> int:
        return MINOR_UNITS[self.currency]

    def version_at(self, instant: datetime) -> PriceVersion | None:
        """The version in force at ``instant`` (None before the first)."""
        found = None
        for version in self.versions:
            if version.effective_from > instant:
                break
            found = version
        return found


def _mapping(value: Any, where: str, allowed: frozenset[str] | None = None) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise PriceListError(where, f"expected a mapping, got {_shown(value)}")
    for key in value:
        if not isinstance(key, str) or not key:
            raise PriceListError(where, f"a key must be a non-empty text, got {key!r}")
        if allowed is not None and key not in allowed:
            raise PriceListError(
                f"{where}.{key}" if where else key, f"unknown member (one of {', '.join(sorted(allowed))})"
            )
    return value


def _shown(value: Any) -> str:
    if isinstance(value, YamlFloat):
        return f"the float {value}"
    return f"{type(value).__name__} {value!r}"


def amount(value: Any, where: str) -> Decimal:
    """A price, factor or modifier: a decimal text or an integer, finite and not negative."""
    if isinstance(value, YamlFloat):
        raise PriceListError(where, f'a YAML float ({value}) where money belongs: quote it, as "{value}"')
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise PriceListError(where, f'expected a decimal text such as "0.0125", got {_shown(value)}')
    try:
        number = Decimal(value.strip() if isinstance(value, str) else value)
    except InvalidOperation:
        raise PriceListError(where, f"{value!r} is not a decimal number") from None
    if not number.is_finite():
        raise PriceListError(where, f"{value!r} is not a finite number")
    if number < 0:
        raise PriceListError(where, f"{value} is negative")
    return number


def _count(value: Any, where: str, default: int, low: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise PriceListError(where, f"expected a whole number of seconds >= {low}, got {_shown(value)}")
    return value


def _amounts(value: Any, where: str) -> dict[str, Decimal]:
    # Flavor and volume type names may look like numbers in YAML (a flavor "2"): keys are read as text.
    if isinstance(value, dict):
        value = {str(k): v for k, v in value.items()}
    return {key: amount(v, f"{where}.{key}") for key, v in _mapping(value, where).items()}


def _states(
    resource_type: str, value: Any, where: str
) -> tuple[dict[str, Decimal], dict[str, dict[str, Decimal]]]:
    """(factor per state, factors per dimension of the states given as a mapping of dimensions)."""
    aliases = STATE_ALIASES.get(resource_type, {})
    known = STATES[resource_type]
    dimensions = frozenset(DIMENSIONS[resource_type])
    whole: dict[str, Decimal] = {}
    split: dict[str, dict[str, Decimal]] = {}
    for name, factor in _mapping(value, where).items():
        state = aliases.get(name, name)
        if state not in known:
            raise PriceListError(
                f"{where}.{name}",
                f"{resource_type} has no state {name!r} (one of {', '.join(sorted(known | set(aliases)))})",
            )
        if state in whole or state in split:
            raise PriceListError(f"{where}.{name}", f"names the state {state!r} a second time")
        if isinstance(factor, dict):
            _mapping(factor, f"{where}.{name}", dimensions)
            split[state] = {d: amount(f, f"{where}.{name}.{d}") for d, f in sorted(factor.items())}
        else:
            whole[state] = amount(factor, f"{where}.{name}")
    return whole, split


def _type_rules(resource_type: str, value: Any, where: str) -> TypeRules:
    dimensions = DIMENSIONS[resource_type]
    priced = frozenset(d for d in dimensions if d != "flavor")
    allowed = priced | {"states", "default_factor"}
    allowed |= {"flavors"} if "flavor" in dimensions else set()
    allowed |= {"type_modifiers"} if resource_type == "volume" else set()
    rules = _mapping(value, where, frozenset(allowed))
    prices = {d: amount(rules[d], f"{where}.{d}") for d in sorted(priced) if d in rules}
    flavors = _amounts(rules.get("flavors", {}), f"{where}.flavors")
    states, dimension_states = _states(resource_type, rules.get("states", {}), f"{where}.states")
    if not prices and not flavors:
        raise PriceListError(
            where, f"prices nothing (give one of {', '.join(sorted(allowed - _TYPE_MEMBERS))})"
        )
    return TypeRules(
        resource_type=resource_type,
        prices=prices,
        flavors=flavors,
        type_modifiers=_amounts(rules.get("type_modifiers", {}), f"{where}.type_modifiers"),
        states=states,
        dimension_states=dimension_states,
        default_factor=amount(rules.get("default_factor", "1"), f"{where}.default_factor"),
    )


def _version(value: Any, where: str) -> PriceVersion:
    doc = _mapping(value, where, _VERSION_MEMBERS)
    raw = doc.get("effective_from")
    if not isinstance(raw, str):
        raise PriceListError(f"{where}.effective_from", f"expected an RFC 3339 instant, got {_shown(raw)}")
    try:
        effective_from = parse_instant(raw)
    except InstantError as exc:
        raise PriceListError(f"{where}.effective_from", str(exc)) from None
    types = _mapping(doc.get("types"), f"{where}.types", frozenset(DIMENSIONS))
    if not types:
        raise PriceListError(f"{where}.types", "prices no resource type")
    return PriceVersion(
        effective_from=effective_from,
        granularity_seconds=_count(doc.get("granularity_seconds"), f"{where}.granularity_seconds", 1, 1),
        minimum_seconds=_count(doc.get("minimum_seconds"), f"{where}.minimum_seconds", 0, 0),
        types={t: _type_rules(t, rules, f"{where}.types.{t}") for t, rules in sorted(types.items())},
    )


def _versions(value: Any) -> tuple[PriceVersion, ...]:
    if not isinstance(value, list) or not value:
        raise PriceListError("versions", f"expected a non-empty list of versions, got {_shown(value)}")
    versions = [_version(v, f"versions[{i}]") for i, v in enumerate(value)]
    seen: dict[datetime, int] = {}
    for i, version in enumerate(versions):
        # Two versions from one instant would both be in force for every dimension they price.
        if (other := seen.setdefault(version.effective_from, i)) != i:
            raise PriceListError(
                f"versions[{i}].effective_from",
                f"{format_instant(version.effective_from)} overlaps versions[{other}], "
                "in force from the same instant",
            )
    return tuple(sorted(versions, key=lambda v: v.effective_from))


def parse_price_list(doc: Any) -> PriceList:
    """The price list of a loaded document (YAML's, or a stored one's JSON)."""
    top = _mapping(doc, "", _LIST_MEMBERS)
    name = top.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise PriceListError(
            "name", f"expected a name of letters, digits, '.', '_' or '-', got {_shown(name)}"
        )
    currency = top.get("currency")
    if not isinstance(currency, str) or currency not in MINOR_UNITS:
        raise PriceListError("currency", f"{currency!r} is not an ISO 4217 currency code (EUR, USD, CHF...)")
    rounding = top.get("rounding", ROUNDING)
    if rounding != ROUNDING:
        raise PriceListError("rounding", f"{rounding!r}: the one rule is {ROUNDING!r} per line")
    return PriceList(name=name, currency=currency, versions=_versions(top.get("versions")))


def load_price_list(text: str) -> PriceList:
    """The price list of a YAML text; ``PriceListError`` names what is wrong."""
    try:
        doc = load_yaml(text)
    except YamlError as exc:
        raise PriceListError("", str(exc)) from None
    return parse_price_list(doc)


def _texts(amounts: Mapping[str, Decimal]) -> dict[str, str]:
    return {k: str(v) for k, v in sorted(amounts.items())}


def _rules_document(rules: TypeRules) -> dict[str, Any]:
    doc: dict[str, Any] = _texts(rules.prices)
    for member, amounts in (("flavors", rules.flavors), ("type_modifiers", rules.type_modifiers)):
        if amounts:
            doc[member] = _texts(amounts)
    states: dict[str, Any] = {**_texts(rules.states)}
    states.update((state, _texts(factors)) for state, factors in rules.dimension_states.items())
    if states:
        doc["states"] = dict(sorted(states.items()))
    doc["default_factor"] = str(rules.default_factor)
    return doc


def version_document(version: PriceVersion) -> dict[str, Any]:
    """One version as a canonical document (texts for amounts): what the store keeps and compares."""
    return {
        "effective_from": format_instant(version.effective_from),
        "granularity_seconds": version.granularity_seconds,
        "minimum_seconds": version.minimum_seconds,
        "types": {t: _rules_document(r) for t, r in sorted(version.types.items())},
    }


def price_list_document(price_list: PriceList) -> dict[str, Any]:
    """The canonical document of a list (``parse_price_list`` reads it back to an equal list; the
    store keeps each version's part of it)."""
    return {
        "name": price_list.name,
        "currency": price_list.currency,
        "rounding": ROUNDING,
        "versions": [version_document(v) for v in price_list.versions],
    }
