"""Reading a per-resource usage export back, as a billing engine would: CSV or JSON, exact decimals.

``read_export`` takes what ``tally usage`` or ``GET /api/v1/usage`` wrote (CSV lines, or the JSON
document of ``tally usage --format json``) and answers, per resource and (project, state), the
presence and quantity seconds as ``Decimal``. A group export cannot be checked per resource and is
refused; so is a line that names no resource or holds a number that is not a decimal.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

import orjson

from ._export import RESOURCE_COLUMNS
from ._format import TAIL_COLUMNS

ResourceId = tuple[str, str, str]  # (cloud, resource_type, resource_id)
LineId = tuple[str, str]  # (project_id, state)


class ExportError(ValueError):
    """An export that cannot be read back; the message names the line and member."""


@dataclass(frozen=True, slots=True)
class ExportedLine:
    presence_s: Decimal
    quantities_s: Mapping[str, Decimal] = field(default_factory=dict)


ExportedLines = dict[ResourceId, dict[LineId, ExportedLine]]


@dataclass(frozen=True, slots=True)
class ExportedUsage:
    """The lines of an export, and the quantity members it can hold (a CSV's columns): a member
    outside them says nothing, one inside them that a line lacks is absent from that resource."""

    lines: ExportedLines
    members: frozenset[str]


def _decimal(text: Any, where: str) -> Decimal:
    if not isinstance(text, str):
        raise ExportError(f"{where}: expected a decimal text, got {text!r}")
    try:
        return Decimal(text)
    except InvalidOperation:
        raise ExportError(f"{where}: {text!r} is not a decimal") from None


def _put(out: ExportedLines, ids: tuple[Any, ...], state: Any, line: ExportedLine, where: str) -> None:
    if not all(isinstance(v, str) and v for v in (*ids, state)):
        raise ExportError(f"{where}: a line of a per-resource export names its resource, project and state")
    cloud, rtype, rid, project_id = ids
    lines = out.setdefault((cloud, rtype, rid), {})
    if (project_id, state) in lines:
        raise ExportError(f"{where}: {rtype} {rid} has two lines for project {project_id} state {state}")
    lines[(project_id, state)] = line


def _read_csv(text: str) -> ExportedUsage:
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    if list(header[: len(RESOURCE_COLUMNS)]) != list(RESOURCE_COLUMNS):
        raise ExportError(f"line 1: a per-resource export starts with {', '.join(RESOURCE_COLUMNS)}")
    quantity_columns = [c for c in header if c.endswith("_s") and c != "presence_s" and c not in TAIL_COLUMNS]
    out: ExportedLines = {}
    for n, row in enumerate(reader, start=2):
        where = f"line {n}"
        quantities = {
            c[:-2]: _decimal(row[c], f"{where} {c}") for c in quantity_columns if row.get(c) not in (None, "")
        }
        line = ExportedLine(_decimal(row.get("presence_s"), f"{where} presence_s"), quantities)
        _put(out, tuple(row.get(c) for c in RESOURCE_COLUMNS), row.get("state"), line, where)
    return ExportedUsage(out, frozenset(c[:-2] for c in quantity_columns))


def _read_json(data: bytes) -> ExportedUsage:
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ExportError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
        raise ExportError("a JSON export is an object with items")
    if doc.get("group_by"):
        raise ExportError("a group export cannot be checked per resource: export without group_by")
    out: ExportedLines = {}
    members: set[str] = set()
    for n, item in enumerate(doc["items"]):
        where = f"items[{n}]"
        if not isinstance(item, dict):
            raise ExportError(f"{where}: not an object")
        raw = item.get("quantities_s") or {}
        if not isinstance(raw, dict):
            raise ExportError(f"{where}.quantities_s: not an object")
        quantities = {str(m): _decimal(v, f"{where}.quantities_s.{m}") for m, v in raw.items()}
        members.update(quantities)
        line = ExportedLine(_decimal(item.get("presence_s"), f"{where}.presence_s"), quantities)
        _put(out, tuple(item.get(c) for c in RESOURCE_COLUMNS), item.get("state"), line, where)
    return ExportedUsage(out, frozenset(members))


def read_export(data: bytes) -> ExportedUsage:
    """The per-resource usage an export holds (CSV, or JSON when it starts with ``{``)."""
    if data.lstrip()[:1] == b"{":
        return _read_json(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ExportError(f"not UTF-8 text: {exc}") from None
    return _read_csv(text)
