"""The export's two encodings, JSON items and CSV lines, with exact decimal seconds in both.

Quantities are decimal texts (``"216000"``, ``"0.5"``), never JSON floats: a bill must not depend
on how a client parses a number. The CSV has one column per numeric size member the registered size
schemas declare (``vcpus_s``, ``size_gb_s``...), so its header is known before the first line is
read; the JSON item carries every numeric member the events held.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from tally.core import format_instant, seconds_text
from tally.store import ResourceType

from ._export import UsageRow

TAIL_COLUMNS = ("creates", "deletes", "received_at")


def row_json(columns: Sequence[str], row: UsageRow) -> dict[str, Any]:
    line = row.line
    item: dict[str, Any] = dict(zip(columns, row.values, strict=True))
    item["state"] = row.state
    item["presence_s"] = seconds_text(line.presence_us)
    item["quantities_s"] = {m: seconds_text(v) for m, v in sorted(line.quantities.items())}
    item["creates"] = line.creates
    item["deletes"] = line.deletes
    item["received_at"] = format_instant(line.received_at) if line.received_at is not None else None
    return item


def quantity_members(types: Iterable[ResourceType], resource_type: str | None = None) -> list[str]:
    """The numeric members of the size schemas (of one type when given), sorted: the CSV's columns."""
    members: set[str] = set()
    for t in types:
        if resource_type is not None and t.resource_type != resource_type:
            continue
        properties = t.size_schema.get("properties")
        if not isinstance(properties, dict):
            continue
        for name, spec in properties.items():
            kinds = spec.get("type") if isinstance(spec, dict) else None
            kinds = kinds if isinstance(kinds, list) else [kinds]
            if "number" in kinds or "integer" in kinds:
                members.add(str(name))
    return sorted(members)


def csv_header(columns: Sequence[str], members: Sequence[str]) -> list[str]:
    return [*columns, "state", "presence_s", *(f"{m}_s" for m in members), *TAIL_COLUMNS]


def csv_text(lines: Iterable[Sequence[Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerows(lines)
    return buffer.getvalue()


def csv_rows(rows: Iterable[UsageRow], members: Sequence[str]) -> str:
    """CSV lines of ``rows``; a member the row does not hold is an empty cell (not a zero)."""
    out: list[list[Any]] = []
    stamps: dict[datetime, str] = {}  # a batch's events share their received_at: format each once
    # Integer member-microseconds repeat (a month of presence, times a few flavors' sizes): each is
    # written once. Only ints: a Decimal equal to an int hashes alike, and is rare enough to format.
    texts: dict[Any, str] = {}
    for row in rows:
        line = row.line
        quantities = line.quantities
        received = line.received_at
        stamp = ""
        if received is not None:
            stamp = stamps.get(received) or stamps.setdefault(received, format_instant(received))
        # None (a group member the line lacks) is written as an empty cell by the csv module.
        cells: list[Any] = [*row.values, row.state]
        numbers: list[int | Decimal | None] = [line.presence_us]
        numbers += [quantities.get(m) for m in members]
        for value in numbers:
            if value is None:
                cells.append("")
            elif type(value) is int:
                text = texts.get(value)
                if text is None:
                    text = texts[value] = seconds_text(value)
                cells.append(text)
            else:
                cells.append(seconds_text(value))
        cells += (line.creates, line.deletes, stamp)
        out.append(cells)
    return csv_text(out)
