"""Operations: one declaration per route, from which both the OpenAPI document and request checks come.

An ``Operation`` names its path, auth, query model and body model (pydantic).
``bind`` wraps its handler so that, before the handler runs, the caller is
authenticated and the query string and JSON body are validated against exactly
the models the document is generated from. A mismatch is a 400 whose
``errors[].loc`` names the member (``query.limit``, ``body.at``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, get_args, get_origin

import orjson
from pydantic import BaseModel, ConfigDict, PlainValidator, ValidationError, WithJsonSchema
from werkzeug.datastructures import MultiDict

from tally.core import INSTANT_EDGE_PATTERN, InstantError, parse_instant

from ._auth import Auth
from ._principal import Principal
from ._problems import CONTRACT_MISMATCH, Problem, invalid
from ._services import ReportingServices


def _instant(value: object) -> datetime:
    if not isinstance(value, str):
        raise ValueError("must be an RFC 3339 instant string")
    try:
        return parse_instant(value)
    except (InstantError, OverflowError) as exc:
        raise ValueError(f"must be an RFC 3339 instant with a zone, got {value!r}") from exc


Instant = Annotated[
    datetime,
    PlainValidator(_instant),
    WithJsonSchema({"type": "string", "format": "date-time", "pattern": INSTANT_EDGE_PATTERN}),
]


class Model(BaseModel):
    """Base of request models: unknown members are refused, so a typo is an error, not a no-op."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True, slots=True)
class Reply:
    """A documented answer of an operation: status, description and body schema (None: no body).

    ``other_media``: the media types the same answer may come in besides JSON (on the request's
    ``Accept``), each with its schema, e.g. the usage export's ``text/csv``."""

    status: int
    description: str
    model: type[BaseModel] | None = None
    other_media: tuple[tuple[str, Mapping[str, Any]], ...] = ()


@dataclass(slots=True)
class Call:
    """What a handler gets: validated inputs and the authenticated caller."""

    services: ReportingServices
    path: dict[str, str]
    query: Any
    body: Any
    principal: Principal
    raw_body: bytes = b""


Handler = Callable[[Call], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Operation:
    method: str
    path: str  # OpenAPI template, e.g. /api/v1/projects/{id}
    operation_id: str
    summary: str
    auth: Auth
    handler: Handler
    replies: tuple[Reply, ...]
    query: type[Model] | None = None
    body: type[Model] | None = None
    # A body schema documented as-is and not validated by a model (the events batch: per-item refusals).
    raw_body_schema: Mapping[str, Any] | None = None
    tag: str = "reporting"
    path_formats: Mapping[str, str] = field(default_factory=dict)  # path param -> "uuid"
    max_body: int | None = None  # bytes; a larger body is a 413 before it is decoded
    lean: bool = False  # answered by the lean lane (``_lean``), not by Quart: the hot listings

    @property
    def quart_rule(self) -> str:
        return self.path.replace("{", "<").replace("}", ">")


def _has_nul(value: Any, loc: str) -> str | None:
    if isinstance(value, str):
        return loc if "\x00" in value else None
    if isinstance(value, dict):
        for k, v in value.items():
            found = _has_nul(k, loc) or _has_nul(v, f"{loc}.{k}")
            if found:
                return found
    if isinstance(value, list):
        for i, v in enumerate(value):
            found = _has_nul(v, f"{loc}.{i}")
            if found:
                return found
    return None


def _is_list_field(annotation: Any) -> bool:
    if get_origin(annotation) is list:
        return True
    return any(get_origin(arg) is list for arg in get_args(annotation))


def _errors_of(exc: ValidationError, prefix: str, model: type[BaseModel]) -> list[dict[str, str]]:
    aliases = {name: (f.alias or name) for name, f in model.model_fields.items()}
    out: list[dict[str, str]] = []
    for err in exc.errors(include_url=False):
        parts = [str(p) for p in err["loc"]]
        if parts and parts[0] in aliases:
            parts[0] = aliases[parts[0]]
        loc = ".".join([prefix, *parts])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown member" if prefix == "body" else "unknown parameter"
        out.append({"loc": loc, "msg": msg})
    return out


def parse_query(model: type[Model] | None, args: MultiDict[str, str]) -> Any:
    """Validate the query string's ``args`` against ``model``; list fields take repeated or
    comma-separated values."""
    if model is None:
        if args:
            name = next(iter(args.keys()))
            raise invalid(f"query.{name}", "unknown parameter")
        return None
    by_alias = {(f.alias or name): f for name, f in model.model_fields.items()}
    data: dict[str, Any] = {}
    for name in args:
        values = args.getlist(name)
        for value in values:
            if "\x00" in value:
                raise invalid(f"query.{name}", "must not contain a NUL character")
        spec = by_alias.get(name)
        if spec is not None and _is_list_field(spec.annotation):
            data[name] = [part for value in values for part in value.split(",") if part]
        elif len(values) > 1:
            raise invalid(f"query.{name}", "given more than once")
        else:
            data[name] = values[0]
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise Problem("validation", CONTRACT_MISMATCH, errors=_errors_of(exc, "query", model)) from None


def decode_json(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise invalid("body", f"not JSON: {exc}") from None


# JSON's whitespace (RFC 8259): bytes.strip() would also drop \x0b and \x0c, which no JSON text holds.
JSON_WHITESPACE = b" \t\r\n"


def is_blank(raw: bytes) -> bool:
    """An absent body, or one of JSON whitespace only."""
    return not raw.strip(JSON_WHITESPACE)


def parse_body(model: type[Model], raw: bytes) -> Any:
    """Validate the JSON body against ``model``; an absent or blank body validates as ``{}``."""
    data: Any = {} if is_blank(raw) else decode_json(raw)
    nul = _has_nul(data, "body")
    if nul:
        raise invalid(nul, "must not contain a NUL character")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise Problem("validation", CONTRACT_MISMATCH, errors=_errors_of(exc, "body", model)) from None


class Router:
    """Collects the operations of one routes module (``@router.route(...)`` on each handler)."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.operations: list[Operation] = []

    def route(
        self,
        method: str,
        path: str,
        *,
        summary: str,
        auth: Auth,
        replies: tuple[Reply, ...],
        query: type[Model] | None = None,
        body: type[Model] | None = None,
        raw_body_schema: Mapping[str, Any] | None = None,
        path_formats: Mapping[str, str] | None = None,
        max_body: int | None = None,
        lean: bool = False,
    ) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            self.operations.append(
                Operation(
                    method=method,
                    path=path,
                    operation_id=handler.__name__,
                    summary=summary,
                    auth=auth,
                    handler=handler,
                    replies=replies,
                    query=query,
                    body=body,
                    raw_body_schema=raw_body_schema,
                    tag=self.tag,
                    path_formats=dict(path_formats or {}),
                    max_body=max_body,
                    lean=lean,
                )
            )
            return handler

        return register
