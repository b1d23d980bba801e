"""Size schemas: compiling a JSON Schema 2020-12 document and the cache of compiled validators.

Compiling is the expensive part of a schema check, so compiled validators are
kept per (platform, resource_type). A PUT through ``put_resource_type`` drops
the pair's entry at once; entries also expire after ``ttl_s`` so a schema put
through another replica is picked up without a restart.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from tally.store import ResourceType, Store

_MAX_VERDICTS = 4096


class SizeSchemaInvalid(ValueError):
    """A size schema document that does not compile as JSON Schema 2020-12."""


def compile_size_schema(document: Mapping[str, Any]) -> Draft202012Validator:
    """Check a document against the 2020-12 metaschema and return its validator."""
    if not isinstance(document, Mapping):
        raise SizeSchemaInvalid("size_schema must be a JSON object")
    try:
        Draft202012Validator.check_schema(document)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "(root)"
        raise SizeSchemaInvalid(f"size_schema at {where}: {exc.message}") from exc
    return Draft202012Validator(document)


def size_error(validator: Draft202012Validator, size: Mapping[str, Any]) -> str | None:
    """The first error of ``size`` against the schema as ``size.<path>: <message>``, or None."""
    errors = sorted(validator.iter_errors(size), key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:
        return None
    first = errors[0]
    path = ".".join(["size", *(str(p) for p in first.absolute_path)])
    return f"{path}: {first.message}"


class SchemaCache:
    """Compiled validators per pair, and the verdicts on sizes already seen (flavors repeat endlessly)."""

    def __init__(self, store: Store, *, ttl_s: float = 30.0) -> None:
        self._store = store
        self._ttl_s = ttl_s
        self._entries: dict[tuple[str, str], tuple[float, Draft202012Validator | None]] = {}
        self._verdicts: dict[tuple[int, bytes], str | None] = {}

    def check(self, validator: Draft202012Validator, size: Mapping[str, Any]) -> str | None:
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

    async def validator(self, platform: str, resource_type: str) -> Draft202012Validator | None:
        """The compiled schema of the pair, or None when nothing is registered."""
        pair = (platform, resource_type)
        entry = self._entries.get(pair)
        now = time.monotonic()
        if entry is not None and now - entry[0] < self._ttl_s:
            return entry[1]
        registered = await self._store.get_resource_type(platform, resource_type)
        previous = entry[1] if entry is not None else None
        compiled: Draft202012Validator | None
        if registered is None:
            compiled = None
        elif previous is not None and previous.schema == registered.size_schema:
            compiled = previous  # unchanged: the verdicts keyed by it stay true
        else:
            compiled = Draft202012Validator(registered.size_schema)
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
