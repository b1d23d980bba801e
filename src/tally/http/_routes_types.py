"""``/api/v1/resource-types``: the size schema registered per (platform, resource_type).

A PUT compiles the schema (JSON Schema draft 2020-12, metaschema and formats
checked) before anything is stored, so the ingest pipeline never meets a
schema it cannot apply. References must stay inside the document: the
pipeline validates offline. Patterns must compile on RE2 (no backreferences,
no lookaround): the pipeline matches them in linear time, never with ``re``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tally.ingest import SizeSchemaInvalid
from tally.ingest import compile_size_schema as compile_document

from ._contract import Call, Reply, Router
from ._models import ResourceTypeBody, ResourceTypeOut, ResourceTypePage
from ._problems import Problem, invalid
from ._serialize import resource_type_json

router = Router("resource-types")

MAX_SCHEMA_BYTES = 256 * 1024
TYPE_PATH = "/api/v1/resource-types/{platform}/{resource_type}"


@router.route(
    "GET",
    "/api/v1/resource-types",
    summary="Every registered resource type with its size schema",
    auth="api",
    replies=(Reply(200, "all types (one page)", ResourceTypePage),),
)
async def list_resource_types(call: Call) -> Any:
    types = await call.services.store.list_resource_types()
    return {"items": [resource_type_json(t) for t in types], "next_cursor": None}


@router.route(
    "GET",
    TYPE_PATH,
    summary="One resource type's size schema",
    auth="api",
    replies=(Reply(200, "the type", ResourceTypeOut),),
)
async def get_resource_type(call: Call) -> Any:
    found = await call.services.store.get_resource_type(call.path["platform"], call.path["resource_type"])
    if found is None:
        raise Problem(
            "not_found",
            f"no resource type {call.path['resource_type']!r} on platform {call.path['platform']!r}",
        )
    return resource_type_json(found)


def _refs(node: Any, loc: str) -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield f"{loc}.$ref", value
            yield from _refs(value, f"{loc}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _refs(value, f"{loc}.{i}")


def compile_size_schema(schema: dict[str, Any]) -> None:
    """Refuse, naming the member, a schema the pipeline could not apply."""
    try:
        compile_document(schema)
    except SizeSchemaInvalid as exc:
        where = ".".join(["body.size_schema", *exc.path])
        raise invalid(where, exc.message) from None
    for loc, ref in _refs(schema, "body.size_schema"):
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise invalid(loc, "only references inside the document (#...) are allowed")


@router.route(
    "PUT",
    TYPE_PATH,
    summary="Register or replace a size schema (admin); compiled before it is stored",
    auth="admin",
    body=ResourceTypeBody,
    max_body=MAX_SCHEMA_BYTES,
    replies=(Reply(200, "the stored type", ResourceTypeOut),),
)
async def put_resource_type(call: Call) -> Any:
    body: ResourceTypeBody = call.body
    compile_size_schema(body.size_schema)
    try:
        stored = await call.services.pipeline.put_resource_type(
            call.path["platform"], call.path["resource_type"], body.size_schema
        )
    except SizeSchemaInvalid as exc:
        raise invalid("body.size_schema", str(exc)) from None
    return resource_type_json(stored)
