"""Size schemas: compiling a JSON Schema 2020-12 document and the cache of compiled validators.

Compiling is the expensive part of a schema check, so compiled validators are
kept per (platform, resource_type). A PUT through ``put_resource_type`` drops
the pair's entry at once; entries also expire after ``ttl_s`` so a schema put
through another replica is picked up without a restart.

Every regular expression of a size schema (``pattern``, the keys of
``patternProperties``, and the ``format: regex`` check of the document itself)
runs on RE2, never on Python's ``re``. Validation runs on the event loop, and
``re`` backtracks: ``^(a+)+$`` against a run of ``a`` then ``!`` takes time that
doubles with each character, while every request, ``/healthz`` included, waits.
RE2 matches in time linear in the input (both measured in docs/benchmarks.md,
section "size-schema patterns"). RE2 has no backreferences or lookaround, so a
pattern that needs them is refused when the schema is put, naming it; and
its ``$`` ends the text, as in ECMA-262, where ``re``'s also matched before a
final newline.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator, Mapping
from typing import Any

import orjson
import re2  # type: ignore[import-untyped]
from jsonschema import Draft202012Validator, FormatChecker, validators
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

from tally.store import CatalogRole, ResourceType

_MAX_VERDICTS = 4096
_MAX_PATTERNS = 1024

SizeValidator = Validator


class SizeSchemaInvalid(ValueError):
    """A size schema document that does not compile as JSON Schema 2020-12 with RE2 patterns."""

    def __init__(self, message: str, path: tuple[str, ...] = ()) -> None:
        where = "/".join(path) or "(root)"
        super().__init__(f"size_schema at {where}: {message}")
        self.path = path
        self.message = message


def _re2_options() -> Any:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is the caller's answer, not noise on stderr
    return options


_OPTIONS = _re2_options()


@functools.lru_cache(maxsize=_MAX_PATTERNS)
def _regex(pattern: str) -> tuple[Any, str | None]:
    """The compiled pattern, or None and why RE2 cannot compile it."""
    try:
        return re2.compile(pattern, _OPTIONS), None
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "unsupported"
        text = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        return None, f"pattern {pattern!r} is not supported by RE2 (linear-time regex engine): {text}"


def re2_error(pattern: str) -> str | None:
    """Why RE2 cannot compile ``pattern``, or None when it can."""
    return _regex(pattern)[1]


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    regex, error = _regex(pattern)
    if error is not None:
        yield ValidationError(error)
    elif regex.search(instance) is None:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        regex, error = _regex(pattern)
        if error is not None:
            yield ValidationError(error)
            continue
        for key, value in instance.items():
            if regex.search(key) is not None:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _extras(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> set[str]:
    properties = schema.get("properties", {})
    regexes = [regex for regex, _ in map(_regex, schema.get("patternProperties", {})) if regex is not None]
    return {
        key
        for key in instance
        if key not in properties and not any(regex.search(key) is not None for regex in regexes)
    }


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    extras = _extras(instance, schema)
    if validator.is_type(additional, "object"):
        for extra in sorted(extras):
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        joined = ", ".join(repr(each) for each in sorted(extras))
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {patterns}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({joined} {verb} unexpected)")


_UNEVALUATED_WITH_RE = (
    "unevaluatedProperties is not supported where patternProperties or a reference "
    "can reach it (jsonschema would match those patterns with Python's re)"
)
_REACHES_RE = frozenset({"patternProperties", "$ref", "$dynamicRef"})


def _mentions(node: Any, keys: frozenset[str]) -> bool:
    if isinstance(node, Mapping):
        return any(key in keys or _mentions(value, keys) for key, value in node.items())
    if isinstance(node, list):
        return any(_mentions(value, keys) for value in node)
    return False


def _unevaluated_properties(
    validator: Any, unevaluated: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    # jsonschema finds the evaluated keys by running patternProperties itself, with re.
    if _mentions(schema, _REACHES_RE):
        if validator.is_type(instance, "object"):
            yield ValidationError(_UNEVALUATED_WITH_RE)
        return
    yield from Draft202012Validator.VALIDATORS["unevaluatedProperties"](
        validator, unevaluated, instance, schema
    )


def _is_re2_regex(instance: object) -> bool:
    if not isinstance(instance, str):
        return True
    error = re2_error(instance)
    if error is not None:
        raise ValueError(error)
    return True


def _format_checker() -> FormatChecker:
    checker = FormatChecker(formats=())
    checker.checkers.update(validators.Draft202012Validator.FORMAT_CHECKER.checkers)
    checker.checks("regex", raises=ValueError)(_is_re2_regex)
    return checker


_FORMATS = _format_checker()

# The stubs leave ``extend`` untyped; the class it makes is a ``jsonschema.protocols.Validator``.
_SizeValidatorClass: Any = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
        "unevaluatedProperties": _unevaluated_properties,
    },
    format_checker=_FORMATS,
)


def _unevaluated_reaching_re(node: Any, path: tuple[str, ...]) -> tuple[str, ...] | None:
    if isinstance(node, Mapping):
        if "unevaluatedProperties" in node and _mentions(node, _REACHES_RE):
            return (*path, "unevaluatedProperties")
        for key, value in node.items():
            if (found := _unevaluated_reaching_re(value, (*path, str(key)))) is not None:
                return found
    elif isinstance(node, list):
        for i, value in enumerate(node):
            if (found := _unevaluated_reaching_re(value, (*path, str(i)))) is not None:
                return found
    return None


def size_validator(document: Mapping[str, Any]) -> SizeValidator:
    """The validator of a stored document; its patterns run on RE2 (a refused one fails the item)."""
    validator: SizeValidator = _SizeValidatorClass(document)
    return validator


def compile_size_schema(document: Mapping[str, Any]) -> SizeValidator:
    """Check a document against the 2020-12 metaschema (patterns on RE2) and return its validator."""
    if not isinstance(document, Mapping):
        raise SizeSchemaInvalid("size_schema must be a JSON object")
    meta = _SizeValidatorClass(Draft202012Validator.META_SCHEMA, format_checker=_FORMATS)
    errors = sorted(meta.iter_errors(document), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        first = errors[0]
        where = tuple(str(p) for p in first.absolute_path)
        if first.validator == "format" and first.validator_value == "regex":
            raise SizeSchemaInvalid(re2_error(str(first.instance)) or first.message, where)
        raise SizeSchemaInvalid(f"not a valid JSON Schema (draft 2020-12): {first.message}", where)
    if (reached := _unevaluated_reaching_re(document, ())) is not None:
        raise SizeSchemaInvalid(_UNEVALUATED_WITH_RE, reached)
    return size_validator(document)


def size_error(validator: SizeValidator, size: Mapping[str, Any]) -> str | None:
    """The first error of ``size`` against the schema as ``size.<path>: <message>``, or None."""
    errors = sorted(validator.iter_errors(size), key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:
        return None
    first = errors[0]
    path = ".".join(["size", *(str(p) for p in first.absolute_path)])
    return f"{path}: {first.message}"


class SchemaCache:
    """Compiled validators per pair, and the verdicts on sizes already seen (flavors repeat endlessly)."""

    def __init__(self, store: CatalogRole, *, ttl_s: float = 30.0) -> None:
        self._store = store
        self._ttl_s = ttl_s
        self._entries: dict[tuple[str, str], tuple[float, SizeValidator | None]] = {}
        self._verdicts: dict[tuple[int, bytes], str | None] = {}

    def check(self, validator: SizeValidator, size: Mapping[str, Any]) -> str | None:
        """``size_error`` of ``size``, remembered per (validator, size document)."""
        try:
            document = orjson.dumps(size, option=orjson.OPT_SORT_KEYS)
        except TypeError:
            return size_error(validator, size)
        key = (id(validator), document)
        if key in self._verdicts:
            return self._verdicts[key]
        if len(self._verdicts) >= _MAX_VERDICTS:
            self._verdicts.clear()
        verdict = self._verdicts[key] = size_error(validator, size)
        return verdict

    async def validator(self, platform: str, resource_type: str) -> SizeValidator | None:
        """The compiled schema of the pair, or None when nothing is registered."""
        pair = (platform, resource_type)
        entry = self._entries.get(pair)
        now = time.monotonic()
        if entry is not None and now - entry[0] < self._ttl_s:
            return entry[1]
        registered = await self._store.get_resource_type(platform, resource_type)
        previous = entry[1] if entry is not None else None
        compiled: SizeValidator | None
        if registered is None:
            compiled = None
        elif previous is not None and previous.schema == registered.size_schema:
            compiled = previous  # unchanged: the verdicts keyed by it stay true
        else:
            compiled = size_validator(registered.size_schema)
        if previous is not None and compiled is not previous:
            # Verdicts are keyed by validator identity; a dropped validator's id may be reused.
            self._verdicts.clear()
        self._entries[pair] = (now, compiled)
        return compiled

    def invalidate(self, platform: str, resource_type: str) -> None:
        self._entries.pop((platform, resource_type), None)
        self._verdicts.clear()

    async def put(self, platform: str, resource_type: str, document: Mapping[str, Any]) -> ResourceType:
        """Compile, store, and drop the cached validator of the pair."""
        compile_size_schema(document)
        stored = await self._store.put_resource_type(platform, resource_type, document)
        self.invalidate(platform, resource_type)
        return stored
