"""The JSON objects the API answers for the store's and the core's types (instants as RFC 3339 ``Z``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tally.core import Interval, ResourceRow, StoredEvent, format_instant
from tally.store import Project, RejectedEvent, Relation, ResourceType


def instant(value: datetime | None) -> str | None:
    return None if value is None else format_instant(value)


def event_json(stored: StoredEvent) -> dict[str, Any]:
    return stored.to_wire()


def resource_json(row: ResourceRow) -> dict[str, Any]:
    return row.to_wire()


def interval_json(interval: Interval) -> dict[str, Any]:
    return {
        "from": format_instant(interval.start),
        "to": instant(interval.end),
        "state": interval.state,
        "size": dict(interval.size),
        "project_id": interval.project_id,
    }


def resource_type_json(rtype: ResourceType) -> dict[str, Any]:
    return {
        "platform": rtype.platform,
        "resource_type": rtype.resource_type,
        "size_schema": dict(rtype.size_schema),
        "updated_at": format_instant(rtype.updated_at),
    }


def project_json(project: Project) -> dict[str, Any]:
    return {
        "id": project.id,
        "platform": project.platform,
        "cloud": project.cloud,
        "external_id": project.external_id,
        "name": project.name,
        "metadata": dict(project.metadata),
        "created_at": format_instant(project.created_at),
    }


def relation_json(relation: Relation) -> dict[str, Any]:
    return {
        "id": relation.id,
        "source_id": relation.source_id,
        "target_id": relation.target_id,
        "relation_type": relation.relation_type,
        "metadata": dict(relation.metadata),
        "valid_from": format_instant(relation.valid_from),
        "valid_to": instant(relation.valid_to),
        "created_at": format_instant(relation.created_at),
    }


def rejected_json(rejected: RejectedEvent) -> dict[str, Any]:
    return {
        "id": rejected.id,
        "received_at": format_instant(rejected.received_at),
        "reason": rejected.reason,
        "raw": rejected.raw,
    }
