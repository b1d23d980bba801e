"""``/api/v1/projects``: projects, their relations over time, the related walk and the usage summary."""

from __future__ import annotations

from collections import deque
from typing import Any

from tally.core import UsageWindow, format_instant, utc_now
from tally.store import Conflict, Project, Relation, ResourceFilter, RuleViolation
from tally.usage import UsageQuery, resource_pages

from ._contract import Call, Reply, Router
from ._models import (
    AtQuery,
    ProjectCreate,
    ProjectOut,
    ProjectPage,
    ProjectPatch,
    ProjectsQuery,
    RelatedList,
    RelatedQuery,
    RelationCreate,
    RelationList,
    RelationOut,
    RelationPatch,
    SummaryAnswer,
    SummaryQuery,
)
from ._principal import CloudView, Principal
from ._problems import Problem, invalid
from ._routes_usage import checked_window
from ._serialize import project_json, relation_json

router = Router("projects")

PROJECT = "/api/v1/projects/{id}"
RELATION = PROJECT + "/relations/{relation_id}"
UUIDS = {"id": "uuid", "relation_id": "uuid"}


async def _project(call: Call) -> Project:
    principal: Principal = call.principal
    project_id = call.path["id"]
    found = await call.services.store.get_project(project_id)
    # One answer for a project that does not exist and one the caller may not see: nothing leaks.
    if found is None or not principal.owns(found.cloud, found.external_id):
        raise Problem("not_found", f"no project {project_id}")
    return found


async def _viewed_projects(call: Call, view: CloudView) -> dict[str, Any] | None:
    """The projects Tally knows of a keystone token limited to some projects (None: every project of
    its cloud, which the listing pages through)."""
    q: ProjectsQuery = call.query
    if view.projects is None:
        return None
    found = (
        []
        if q.cloud not in (None, view.cloud)
        else [
            await call.services.store.find_project(view.cloud, external_id)
            for external_id in sorted(view.projects)
        ]
    )
    own = sorted(
        (p for p in found if p is not None and (q.platform is None or p.platform == q.platform)),
        key=lambda p: p.id,
    )
    return {"items": [project_json(p) for p in own], "next_cursor": None}


@router.route(
    "GET",
    "/api/v1/projects",
    summary="List projects ordered by id",
    auth="api",
    query=ProjectsQuery,
    replies=(Reply(200, "a page of projects", ProjectPage),),
)
async def list_projects(call: Call) -> Any:
    q: ProjectsQuery = call.query
    principal: Principal = call.principal
    cloud = q.cloud
    if principal.view is not None:
        listed = await _viewed_projects(call, principal.view)
        if listed is not None:
            return listed
        if cloud not in (None, principal.view.cloud):
            return {"items": [], "next_cursor": None}
        cloud = principal.view.cloud
    if principal.projects is not None:
        own = [
            p
            for p in sorted(principal.projects, key=lambda p: p.id)
            if (q.platform is None or p.platform == q.platform) and (q.cloud is None or p.cloud == q.cloud)
        ]
        return {"items": [project_json(p) for p in own], "next_cursor": None}
    seal = await call.services.cursors.seal()
    page = await call.services.store.list_projects(
        platform=q.platform, cloud=cloud, limit=q.limit, after=seal.decode_id_key("projects", q.cursor)
    )
    return {
        "items": [project_json(p) for p in page.items],
        "next_cursor": seal.encode_id_key("projects", page.next_key),
    }


@router.route(
    "POST",
    "/api/v1/projects",
    summary="Create a project (admin)",
    auth="admin",
    body=ProjectCreate,
    replies=(Reply(201, "the created project; Location names it", ProjectOut),),
)
async def create_project(call: Call) -> Any:
    body: ProjectCreate = call.body
    try:
        project = await call.services.store.create_project(
            platform=body.platform,
            cloud=body.cloud,
            external_id=body.external_id,
            name=body.name,
            metadata=body.metadata,
        )
    except Conflict:
        raise Problem(
            "conflict", f"a project with external_id {body.external_id!r} exists in cloud {body.cloud!r}"
        ) from None
    except RuleViolation:
        raise invalid(
            "body.platform",
            "platform and cloud must be equal when either is a virtual platform (meta, partner)",
            status=422,
        ) from None
    return project_json(project), 201, {"Location": f"/api/v1/projects/{project.id}"}


@router.route(
    "GET",
    PROJECT,
    summary="One project",
    auth="api",
    path_formats=UUIDS,
    replies=(Reply(200, "the project", ProjectOut),),
)
async def get_project(call: Call) -> Any:
    return project_json(await _project(call))


@router.route(
    "PATCH",
    PROJECT,
    summary="Change a project's name or metadata (admin)",
    auth="admin",
    body=ProjectPatch,
    path_formats=UUIDS,
    replies=(Reply(200, "the changed project", ProjectOut),),
)
async def patch_project(call: Call) -> Any:
    body: ProjectPatch = call.body
    updated = await call.services.store.update_project(
        call.path["id"], name=body.name, metadata=body.metadata
    )
    if updated is None:
        raise Problem("not_found", f"no project {call.path['id']}")
    return project_json(updated)


@router.route(
    "GET",
    PROJECT + "/relations",
    summary="The project's relations (either end), active now or valid at `at`",
    auth="api",
    query=AtQuery,
    path_formats=UUIDS,
    replies=(Reply(200, "the relations", RelationList),),
)
async def list_relations(call: Call) -> Any:
    project = await _project(call)
    q: AtQuery = call.query
    relations = await call.services.store.list_relations(project.id, at=q.at)
    if q.at is None:
        relations = [r for r in relations if r.valid_to is None]
    return {"items": [relation_json(r) for r in relations]}


def _reaches(relations: list[Relation], start: str, goal: str) -> bool:
    edges: dict[str, list[str]] = {}
    for r in relations:
        edges.setdefault(r.source_id, []).append(r.target_id)
    seen, todo = {start}, [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        for nxt in edges.get(node, []):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


@router.route(
    "POST",
    PROJECT + "/relations",
    summary="Relate the project to a target project (admin); a relation that closes a cycle is refused",
    auth="admin",
    body=RelationCreate,
    path_formats=UUIDS,
    replies=(Reply(201, "the created relation", RelationOut),),
)
async def create_relation(call: Call) -> Any:
    project = await _project(call)
    body: RelationCreate = call.body
    target_id = str(body.target_id)
    if target_id == project.id:
        raise invalid("body.target_id", "a project cannot be related to itself", status=422)
    if await call.services.store.get_project(target_id) is None:
        raise invalid("body.target_id", f"no project {target_id}", status=422)
    active = await call.services.store.relations_at(None, relation_type=body.relation_type)
    if _reaches(active, target_id, project.id):
        raise Problem(
            "relation_cycle",
            f"{body.relation_type} from {project.id} to {target_id} would close a cycle of active relations",
        )
    try:
        relation = await call.services.store.create_relation(
            source_id=project.id,
            target_id=target_id,
            relation_type=body.relation_type,
            metadata=body.metadata,
            valid_from=body.valid_from,
        )
    except Conflict:
        raise Problem("conflict", f"an active {body.relation_type} relation to {target_id} exists") from None
    except RuleViolation as exc:
        raise invalid("body.target_id", str(exc), status=422) from None
    location = f"/api/v1/projects/{project.id}/relations/{relation.id}"
    return relation_json(relation), 201, {"Location": location}


async def _relation(call: Call) -> Relation:
    project = await _project(call)
    relation = await call.services.store.get_relation(call.path["relation_id"])
    if relation is None or project.id not in (relation.source_id, relation.target_id):
        raise Problem("not_found", f"no relation {call.path['relation_id']} of project {project.id}")
    return relation


@router.route(
    "PATCH",
    RELATION,
    summary="Change a relation's metadata or end (valid_to) (admin)",
    auth="admin",
    body=RelationPatch,
    path_formats=UUIDS,
    replies=(Reply(200, "the changed relation", RelationOut),),
)
async def patch_relation(call: Call) -> Any:
    relation = await _relation(call)
    body: RelationPatch = call.body
    if body.valid_to is not None and body.valid_to <= relation.valid_from:
        raise invalid("body.valid_to", "must be later than the relation's valid_from", status=422)
    updated = await call.services.store.update_relation(
        relation.id, metadata=body.metadata, valid_to=body.valid_to
    )
    if updated is None:
        raise Problem("not_found", f"no relation {relation.id}")
    return relation_json(updated)


@router.route(
    "DELETE",
    RELATION,
    summary="End a relation now (admin); the row is kept for point-in-time reads",
    auth="admin",
    path_formats=UUIDS,
    replies=(Reply(200, "the ended relation", RelationOut),),
)
async def delete_relation(call: Call) -> Any:
    relation = await _relation(call)
    if relation.valid_to is not None:
        return relation_json(relation)
    ended = await call.services.store.end_relation(relation.id)
    if ended is None:
        raise Problem("not_found", f"no relation {relation.id}")
    return relation_json(ended)


@router.route(
    "GET",
    PROJECT + "/related",
    summary="Projects reachable through relations, breadth-first up to `depth`",
    auth="api",
    query=RelatedQuery,
    path_formats=UUIDS,
    replies=(Reply(200, "related projects, nearest first", RelatedList),),
)
async def related_projects(call: Call) -> Any:
    project = await _project(call)
    q: RelatedQuery = call.query
    relations = await call.services.store.relations_at(q.at, relation_type=q.relation_type)
    edges: dict[str, list[tuple[str, Relation, str]]] = {}
    for r in relations:
        edges.setdefault(r.source_id, []).append((r.target_id, r, "outgoing"))
        edges.setdefault(r.target_id, []).append((r.source_id, r, "incoming"))
    seen = {project.id}
    queue: deque[tuple[str, int]] = deque([(project.id, 0)])
    items: list[dict[str, Any]] = []
    while queue:
        node, depth = queue.popleft()
        if depth >= q.depth:
            continue
        for other, relation, via in sorted(edges.get(node, []), key=lambda e: (e[1].relation_type, e[0])):
            if other in seen:
                continue
            seen.add(other)
            found = await call.services.store.get_project(other)
            if found is None:
                continue
            items.append(
                {
                    "project": project_json(found),
                    "depth": depth + 1,
                    "relation_type": relation.relation_type,
                    "relation_id": relation.id,
                    "via": via,
                }
            )
            queue.append((other, depth + 1))
    return {"items": items}


@router.route(
    "GET",
    PROJECT + "/summary",
    summary="Per resource type: created, deleted, minutes of use in [from, to), and live now",
    auth="api",
    query=SummaryQuery,
    path_formats=UUIDS,
    replies=(Reply(200, "one item per resource type", SummaryAnswer),),
)
async def project_summary(call: Call) -> Any:
    project = await _project(call)
    q: SummaryQuery = call.query
    checked_window(q.from_, q.to)
    store = call.services.store
    query = UsageQuery(
        window=UsageWindow(q.from_, q.to, utc_now()), cloud=project.cloud, project_id=project.external_id
    )
    totals: dict[str, dict[str, Any]] = {}

    def entry(resource_type: str) -> dict[str, Any]:
        zero = {"created": 0, "deleted": 0, "micros": 0, "active_now": 0}
        return totals.setdefault(resource_type, zero)

    async for rows in resource_pages(store, query):
        for row in rows:
            line = entry(row.values[1] or "")
            line["created"] += row.line.creates
            line["deleted"] += row.line.deletes
            line["micros"] += row.line.presence_us
    live = ResourceFilter(cloud=project.cloud, project_id=project.external_id, status="active")
    for count in await store.resource_stats(["resource_type"], filters=live):
        entry(count["resource_type"])["active_now"] += int(count["count"])
    items = [
        {
            "resource_type": rtype,
            "created": e["created"],
            "deleted": e["deleted"],
            "total_minutes": round(e["micros"] / 60_000_000, 3),
            "active_now": e["active_now"],
        }
        for rtype, e in sorted(totals.items())
    ]
    return {
        "project": project_json(project),
        "from": format_instant(q.from_),
        "to": format_instant(q.to),
        "items": items,
    }
