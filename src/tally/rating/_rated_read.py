"""Reading a rated export back, and rating intervals known otherwise than by events (an oracle's). Pure.

``read_rated`` takes the CSV ``tally usage --price-list`` wrote (or its JSON document) and answers,
per resource, each line's consumed quantity, pricing quantity and cost as ``Decimal``, keyed by
(project, state, SKU, charge start). ``interval_facts`` writes a run of intervals as the events
whose fold is those intervals, so that ``Rater.rate`` prices them by the very rules an export is
priced by: the simulator judges a rated export against its oracle with it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import orjson

from tally.core import Interval, UsageFact

from ._rated_format import RATED_COLUMNS

ResourceRef = tuple[str, str, str]  # (cloud, resource_type, resource_id)
LineRef = tuple[str, str, str, str]  # (project_id, state, sku, charge_start)


class RatedExportError(ValueError):
    """A rated export that cannot be read back; the message names the line and member."""


@dataclass(frozen=True, slots=True)
class RatedAmounts:
    consumed: Decimal
    pricing: Decimal
    cost: Decimal


RatedLines = dict[ResourceRef, dict[LineRef, RatedAmounts]]


def _decimal(value: Any, where: str) -> Decimal:
    try:
        return Decimal(value)
    except (InvalidOperation, TypeError, ValueError):
        raise RatedExportError(f"{where}: {value!r} is not a decimal") from None


def _put(out: RatedLines, row: dict[str, Any], where: str) -> None:
    missing = [c for c in RATED_COLUMNS if not isinstance(row.get(c), str)]
    if missing:
        raise RatedExportError(f"{where}: a rated line names {missing[0]}")
    resource = (row["cloud"], row["resource_type"], row["resource_id"])
    line = (row["project_id"], row["state"], row["sku"], row["charge_start"])
    lines = out.setdefault(resource, {})
    if line in lines:
        raise RatedExportError(f"{where}: {row['resource_id']} has two lines of {row['sku']} from {line[3]}")
    lines[line] = RatedAmounts(
        _decimal(row["consumed_quantity"], f"{where} consumed_quantity"),
        _decimal(row["pricing_quantity"], f"{where} pricing_quantity"),
        _decimal(row["cost"], f"{where} cost"),
    )


def read_rated(data: bytes) -> RatedLines:
    """The lines of a rated export (CSV, or JSON when it starts with ``{``)."""
    out: RatedLines = {}
    if data.lstrip()[:1] == b"{":
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise RatedExportError(f"not JSON: {exc}") from None
        items = doc.get("items") if isinstance(doc, dict) else None
        if not isinstance(items, list):
            raise RatedExportError("a rated JSON export is an object with items")
        for n, item in enumerate(items):
            _put(out, item if isinstance(item, dict) else {}, f"items[{n}]")
        return out
    try:
        reader = csv.DictReader(io.StringIO(data.decode("utf-8")))
    except UnicodeDecodeError as exc:
        raise RatedExportError(f"not UTF-8 text: {exc}") from None
    if list(reader.fieldnames or [])[: len(RATED_COLUMNS)] != list(RATED_COLUMNS):
        raise RatedExportError(f"line 1: a rated export starts with {', '.join(RATED_COLUMNS[:3])}...")
    for n, row in enumerate(reader, start=2):
        _put(out, dict(row), f"line {n}")
    return out


def interval_facts(intervals: Sequence[Interval]) -> list[UsageFact]:
    """Events whose fold is ``intervals`` (in order): a create where a run of them begins, an update
    where one follows another, a delete where a run ends."""
    facts: list[UsageFact] = []
    for i, iv in enumerate(intervals):
        opens = i == 0 or intervals[i - 1].end != iv.start
        kind = "create" if opens else "update"
        facts.append((iv.start, iv.start, f"i{i}", f"oracle.{kind}", iv.project_id, iv.state, dict(iv.size)))
        closes = iv.end is not None and (i + 1 == len(intervals) or intervals[i + 1].start != iv.end)
        if closes and iv.end is not None:
            facts.append((iv.end, iv.end, f"d{i}", "oracle.delete", iv.project_id, None, None))
    return facts
