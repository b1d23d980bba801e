"""Request and response models of the Reporting API: the OpenAPI document is generated from these.

Query models list every parameter a route takes (unknown ones are refused);
body models refuse unknown members. Response models describe what the
handlers answer, so the document and the answers can be checked against
each other (tests/http run schemathesis over it).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from ._contract import Instant, Model

# The server refuses a NUL character in any string (PostgreSQL cannot store one): the document says so.
NO_NUL = "^[^\\u0000]*$"
Text = Field(default=None, min_length=1, max_length=512, pattern=NO_NUL)
Limit = Field(default=100, ge=1, le=1000, description="page size")
# A JSON object whose strings and member names hold no NUL, at any depth: ``_openapi`` puts the
# recursive schema (JsonValue) in place of this marker (pydantic cannot hold a reference it did not make).
JSON_OBJECT_MARK = "x-tally-json-object"
JsonObject = Annotated[dict[str, Any], WithJsonSchema({JSON_OBJECT_MARK: True})]


def cursor_of(listing: str) -> Any:
    """The ``cursor`` parameter of one listing: only a ``next_cursor`` it answered is valid (it is sealed,
    see ``_cursor``), which the format ``tally-cursor-<listing>`` names; anything else is a 400."""
    return Field(
        default=None,
        max_length=2048,
        description="opaque cursor from next_cursor of this listing; any other value is a 400",
        json_schema_extra={"format": f"tally-cursor-{listing}"},
    )


ResourceGroup = Literal["cloud", "resource_type", "state", "platform", "project_id"]
EventGroup = Literal["cloud", "event_type", "source", "platform", "resource_type"]


# -- queries -------------------------------------------------------------------------------------------
class EventsQuery(Model):
    cloud: str | None = Text
    platform: str | None = Text
    project_id: str | None = Text
    resource_type: str | None = Text
    event_type: str | None = Text
    source: Literal["collector", "reconciliation"] | None = None
    from_: Instant | None = Field(default=None, alias="from", description="inclusive lower bound")
    to: Instant | None = Field(default=None, description="exclusive upper bound")
    limit: int = Limit
    cursor: str | None = cursor_of("events")


class ResourcesQuery(Model):
    cloud: str | None = Text
    platform: str | None = Text
    project_id: str | None = Text
    resource_type: str | None = Text
    state: str | None = Text
    status: Literal["active", "deleted", "all"] = "active"
    limit: int = Limit
    cursor: str | None = cursor_of("resources")


class ResourceStatsQuery(Model):
    group_by: list[ResourceGroup] = Field(default_factory=list, max_length=5)
    status: Literal["active", "deleted", "all"] = "active"
    at: Instant | None = Field(
        default=None,
        description="count the resources as they stood at this instant (each history folded up to it)",
    )
    cloud: str | None = Text
    platform: str | None = Text
    project_id: str | None = Text
    resource_type: str | None = Text
    state: str | None = Text


class EventStatsQuery(Model):
    group_by: list[EventGroup] = Field(default_factory=list, max_length=5)
    from_: Instant = Field(alias="from")
    to: Instant
    interval: Literal["1h", "1d"] = "1d"
    cloud: str | None = Text
    platform: str | None = Text
    project_id: str | None = Text
    resource_type: str | None = Text
    event_type: str | None = Text
    source: Literal["collector", "reconciliation"] | None = None


class RejectedQuery(Model):
    from_: Instant | None = Field(default=None, alias="from")
    to: Instant | None = None
    limit: int = Limit
    cursor: str | None = cursor_of("rejected")


class SyncRunsQuery(Model):
    cloud: str = Field(min_length=1, max_length=512, pattern=NO_NUL)
    from_: Instant | None = Field(default=None, alias="from", description="inclusive bound on started_at")
    to: Instant | None = Field(default=None, description="exclusive bound on started_at")


class ProjectsQuery(Model):
    platform: str | None = Text
    cloud: str | None = Text
    limit: int = Limit
    cursor: str | None = cursor_of("projects")


class SummaryQuery(Model):
    from_: Instant = Field(alias="from")
    to: Instant


class AtQuery(Model):
    at: Instant | None = Field(default=None, description="point in time (default: the relations active now)")


class RelatedQuery(Model):
    depth: int = Field(default=1, ge=1, le=10)
    relation_type: str | None = Text
    at: Instant | None = None


# -- bodies --------------------------------------------------------------------------------------------
class SyncBody(Model):
    at: Instant | None = Field(default=None, description="told instant; needs TALLY_REPORTING_SYNC_ALLOW_AT")


class RebuildBody(Model):
    cloud: str | None = Text
    resource_type: str | None = Text


class ResourceTypeBody(Model):
    size_schema: JsonObject = Field(
        description=(
            "a JSON Schema (draft 2020-12) for payload.size; it must compile, its references stay inside "
            "it and its patterns compile on RE2 (400 naming the member otherwise)"
        )
    )


class ProjectCreate(Model):
    platform: str = Field(min_length=1, max_length=512, pattern=NO_NUL)
    cloud: str = Field(min_length=1, max_length=512, pattern=NO_NUL)
    external_id: str = Field(min_length=1, max_length=512, pattern=NO_NUL)
    name: str | None = Field(default=None, max_length=512, pattern=NO_NUL)
    metadata: JsonObject = Field(default_factory=dict)


class ProjectPatch(Model):
    name: str | None = Field(default=None, max_length=512, pattern=NO_NUL)
    metadata: JsonObject | None = None


class RelationCreate(Model):
    target_id: UUID
    relation_type: str = Field(min_length=1, max_length=512, pattern=NO_NUL)
    metadata: JsonObject = Field(default_factory=dict)
    valid_from: Instant | None = None


class RelationPatch(Model):
    metadata: JsonObject | None = None
    valid_to: Instant | None = None


# -- answers -------------------------------------------------------------------------------------------
class Answer(BaseModel):
    model_config = ConfigDict(extra="allow")


Stamp = Field(json_schema_extra={"format": "date-time"})


class EventOut(Answer):
    event_id: str
    timestamp: str = Stamp
    event_type: str
    platform: str
    cloud: str
    resource_type: str
    resource_id: str
    project_id: str
    source: str
    payload: dict[str, Any]
    received_at: str = Stamp


class ResourceOut(Answer):
    cloud: str
    platform: str
    resource_type: str
    resource_id: str
    project_id: str
    state: str
    size: dict[str, Any]
    created_at: str | None
    deleted_at: str | None
    first_event_at: str
    last_event_type: str
    last_event_at: str
    last_payload: dict[str, Any]


class Rejection(Answer):
    index: int
    event_id: str | None
    reason: str


class IngestAnswer(Answer):
    accepted: int
    duplicates: int
    rejected: list[Rejection]


class EventPage(Answer):
    items: list[EventOut]
    next_cursor: str | None


class ResourcePage(Answer):
    items: list[ResourceOut]
    next_cursor: str | None


class HistoryAnswer(Answer):
    items: list[EventOut]


class IntervalOut(Answer):
    from_: str = Field(alias="from")
    to: str | None
    state: str
    size: dict[str, Any]
    project_id: str


class LifecycleAnswer(Answer):
    resource: ResourceOut
    events: list[EventOut]
    intervals: list[IntervalOut]
    warnings: list[str]


class StatsAnswer(Answer):
    items: list[dict[str, Any]]


class ResourceTypeOut(Answer):
    platform: str
    resource_type: str
    size_schema: dict[str, Any]
    updated_at: str


class ResourceTypePage(Answer):
    items: list[ResourceTypeOut]
    next_cursor: None


class ProjectOut(Answer):
    id: str
    platform: str
    cloud: str
    external_id: str
    name: str | None
    metadata: dict[str, Any]
    created_at: str


class ProjectPage(Answer):
    items: list[ProjectOut]
    next_cursor: str | None


class RelationOut(Answer):
    id: str
    source_id: str
    target_id: str
    relation_type: str
    metadata: dict[str, Any]
    valid_from: str
    valid_to: str | None
    created_at: str


class RelationList(Answer):
    items: list[RelationOut]


class RelatedOut(Answer):
    project: ProjectOut
    depth: int
    relation_type: str
    relation_id: str
    via: str


class RelatedList(Answer):
    items: list[RelatedOut]


class SummaryItem(Answer):
    resource_type: str
    created: int
    deleted: int
    total_minutes: float
    active_now: int


class SummaryAnswer(Answer):
    project: ProjectOut
    from_: str = Field(alias="from")
    to: str
    items: list[SummaryItem]


class RejectedOut(Answer):
    id: str
    received_at: str
    reason: str
    raw: Any


class RejectedPage(Answer):
    items: list[RejectedOut]
    next_cursor: str | None


class SyncRunOut(Answer):
    id: str
    cloud: str
    started_at: str
    completed_at: str | None
    status: str
    stats: dict[str, Any]


class SyncRunsAnswer(Answer):
    items: list[SyncRunOut]


class RebuildAnswer(Answer):
    rebuilt: int


class SyncStats(Answer):
    created: int
    updated: int
    deleted: int


class SyncAnswer(Answer):
    sync_run_id: str
    stats: SyncStats


class ProblemOut(Answer):
    type: str
    title: str
    status: int
    detail: str | None = None
    errors: list[dict[str, str]] | None = None


class WireEvent(BaseModel):
    """The canonical event as posted (documentation of the batch items; the pipeline validates each)."""

    model_config = ConfigDict(extra="forbid")

    event_id: str = Field(min_length=1, max_length=256)
    timestamp: str = Field(json_schema_extra={"format": "date-time"})
    event_type: str = Field(max_length=512, pattern=r"^[a-z0-9_]+(\.[a-z0-9_]+)+$")
    platform: str = Field(min_length=1, max_length=512)
    cloud: str = Field(min_length=1, max_length=512)
    resource_type: str = Field(min_length=1, max_length=512)
    resource_id: str = Field(min_length=1, max_length=512)
    project_id: str = Field(min_length=1, max_length=512)
    source: Literal["collector", "reconciliation"] = "collector"
    payload: dict[str, Any] = Field(default_factory=dict)
