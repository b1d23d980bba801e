"""The OpenAPI 3.1 document, generated from the operations and their pydantic models.

The same models validate requests (see ``_contract``), so the document cannot
drift from what the server accepts. Every operation also documents a
``default`` problem answer: any error status comes as ``application/problem+json``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from ._contract import Operation
from ._models import JSON_OBJECT_MARK, NO_NUL, ProblemOut, WireEvent
from ._problems import PROBLEM_CONTENT_TYPE

REF = "#/components/schemas/{model}"
SECURITY: dict[str, list[dict[str, list[str]]]] = {
    "internal": [{"internalToken": []}],
    "ingest": [{"ingestToken": []}],
    "api": [{"apiToken": []}],
    "admin": [{"apiToken": []}],
    "none": [],
}
_PATH_PARAM = re.compile(r"{([^}]+)}")
# Any JSON value whose strings and member names hold no NUL at any depth: what free-form members
# (metadata, size_schema) accept.
JSON_VALUE: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "pattern": NO_NUL},
        {"type": ["number", "boolean", "null"]},
        {"type": "array", "items": {"$ref": "#/components/schemas/JsonValue"}},
        {
            "type": "object",
            "propertyNames": {"pattern": NO_NUL},
            "additionalProperties": {"$ref": "#/components/schemas/JsonValue"},
        },
    ]
}


def _with_json_objects(node: Any) -> Any:
    """``node`` with every JsonObject marker replaced by the object schema over JsonValue."""
    if isinstance(node, dict):
        if node.get(JSON_OBJECT_MARK):
            rest = {k: v for k, v in node.items() if k != JSON_OBJECT_MARK}
            return {**rest, **JSON_VALUE["anyOf"][3]}
        return {k: _with_json_objects(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_with_json_objects(v) for v in node]
    return node


def _param_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A query parameter's schema without the ``null`` branch of an optional field (absent = null)."""
    schema = {k: v for k, v in schema.items() if k != "title" and not (k == "default" and v is None)}
    variants = schema.get("anyOf")
    if variants:
        kept = [v for v in variants if v != {"type": "null"}]
        rest = {k: v for k, v in schema.items() if k != "anyOf"}
        schema = {**rest, **kept[0]} if len(kept) == 1 else {**rest, "anyOf": kept}
    return schema


def _query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    schema = model.model_json_schema(by_alias=True)
    if "$defs" in schema:
        raise RuntimeError(f"query model {model.__name__} must not need $defs")
    required = set(schema.get("required", []))
    params = []
    for name, prop in schema["properties"].items():
        param: dict[str, Any] = {
            "name": name,
            "in": "query",
            "required": name in required,
            "schema": _param_schema(prop),
        }
        if prop.get("description"):
            param["description"] = prop["description"]
        if _param_schema(prop).get("type") == "array":
            param["style"] = "form"
            param["explode"] = True
        params.append(param)
    return params


def _path_parameters(op: Operation) -> list[dict[str, Any]]:
    params = []
    for name in _PATH_PARAM.findall(op.path):
        schema: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 512, "pattern": "^[^/]+$"}
        if op.path_formats.get(name) == "uuid":
            schema = {"type": "string", "format": "uuid"}
        params.append({"name": name, "in": "path", "required": True, "schema": schema})
    return params


def _probe(summary: str, content_type: str, problem: dict[str, Any]) -> dict[str, Any]:
    return {
        "get": {
            "operationId": summary.split()[0].strip("/").replace("/", "_") or "probe",
            "summary": summary,
            "tags": ["health"],
            "security": [],
            "responses": {
                "200": {"description": "ok", "content": {content_type: {"schema": {}}}},
                "503": {"description": "not ready", "content": {content_type: {"schema": {}}}},
                "404": {
                    "description": "metrics disabled (text), or no probe on this app (problem)",
                    "content": {"text/plain": {"schema": {}}, **problem},
                },
                "default": {"description": "an error (RFC 9457 problem)", "content": problem},
            },
        }
    }


def _reply(
    description: str, schema: dict[str, Any] | None, other_media: Iterable[tuple[str, Mapping[str, Any]]]
) -> dict[str, Any]:
    content = {"application/json": {"schema": schema}} if schema is not None else {}
    content.update((media, {"schema": dict(media_schema)}) for media, media_schema in other_media)
    return {"description": description, **({"content": content} if content else {})}


def build_openapi(operations: Iterable[Operation], *, title: str, version: str) -> dict[str, Any]:
    ops = list(operations)
    models: set[type[BaseModel]] = {ProblemOut, WireEvent}
    for op in ops:
        if op.body is not None:
            models.add(op.body)
        models.update(r.model for r in op.replies if r.model is not None)
    ordered = sorted(models, key=lambda m: m.__name__)
    keyed, top = models_json_schema([(m, "validation") for m in ordered], ref_template=REF, by_alias=True)
    components: dict[str, Any] = dict(top.get("$defs", {}))
    components = _with_json_objects(components)
    components["JsonValue"] = JSON_VALUE
    refs = {m: keyed[(m, "validation")] for m in ordered}
    problem = {PROBLEM_CONTENT_TYPE: {"schema": refs[ProblemOut]}}
    paths: dict[str, Any] = {}
    for op in ops:
        entry: dict[str, Any] = {
            "operationId": op.operation_id,
            "summary": op.summary,
            "tags": [op.tag],
            "security": SECURITY[op.auth],
            "parameters": _path_parameters(op) + (_query_parameters(op.query) if op.query else []),
            "responses": {
                str(r.status): _reply(r.description, refs[r.model] if r.model else None, r.other_media)
                for r in op.replies
            }
            | {"default": {"description": "an error (RFC 9457 problem)", "content": problem}},
        }
        if op.body is not None:
            # An absent body validates as {}: it is optional exactly when the model requires no member.
            entry["requestBody"] = {
                "required": bool(op.body.model_json_schema(by_alias=True).get("required")),
                "content": {"application/json": {"schema": refs[op.body]}},
            }
        elif op.raw_body_schema is not None:
            entry["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": op.raw_body_schema}},
            }
        paths.setdefault(op.path, {})[op.method.lower()] = entry
    # Served by the daemon's health blueprint (tally.http._probes) on the same app; no auth.
    paths["/healthz"] = _probe("/healthz liveness", "application/json", problem)
    paths["/readyz"] = _probe(
        "/readyz readiness: 503 while the DB is down or the schema behind", "application/json", problem
    )
    paths["/metrics"] = _probe("/metrics Prometheus exposition (404 when disabled)", "text/plain", problem)
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                name: {"type": "http", "scheme": "bearer"}
                for name in ("apiToken", "ingestToken", "internalToken")
            },
        },
    }
