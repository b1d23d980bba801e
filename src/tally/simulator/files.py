"""The files of a month (``--out DIR``), written whole or not at all.

``notifications.jsonl`` (one ``{exchange, routing_key, body}`` per line, in
publication order; a truncated twin's body is its raw text), ``events.jsonl``
(the canonical events the collector's own mapping makes of what is published,
held-back ones last), ``oracle.json`` and, with the held-back fault,
``held-back.jsonl``. Everything is written into a temporary directory beside
``DIR`` and moved into place only when all files are complete.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from tally.collector import Mapped, map_notification

from .generator import Month
from .notifications import Notification

NOTIFICATIONS = "notifications.jsonl"
EVENTS = "events.jsonl"
ORACLE = "oracle.json"
HELD_BACK = "held-back.jsonl"


class NotificationFileError(ValueError):
    """A notifications file that cannot be read; the message names the line."""


def expected_events(notifications: Iterable[Notification], *, cloud: str) -> Iterator[dict[str, Any]]:
    """The canonical events the collector maps out of these notifications, in order."""
    for n in notifications:
        outcome = map_notification(n.amqp_body(), cloud=cloud)
        if isinstance(outcome, Mapped):
            yield outcome.event


def _write_lines(path: Path, lines: Iterable[bytes]) -> None:
    with path.open("wb") as fh:
        for line in lines:
            fh.write(line)
            fh.write(b"\n")


def write_month(month: Month, out_dir: str | Path) -> dict[str, Path]:
    """Write the month's files into ``out_dir``; returns the paths written by name."""
    out = Path(out_dir)
    parent = out.parent if str(out.parent) else Path(".")
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {out} exists and is not a directory")
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=parent, prefix=f".{out.name}.tmp-"))
    try:
        names = [NOTIFICATIONS, EVENTS, ORACLE]
        _write_lines(tmp / NOTIFICATIONS, (n.to_line() for n in month.notifications))
        published_then_held = (*month.notifications, *month.held_back)
        _write_lines(
            tmp / EVENTS,
            (
                orjson.dumps(e, option=orjson.OPT_SORT_KEYS)
                for e in expected_events(published_then_held, cloud=month.cloud)
            ),
        )
        (tmp / ORACLE).write_bytes(month.oracle.to_json())
        if "held-back" in month.faults:
            _write_lines(tmp / HELD_BACK, (n.to_line() for n in month.held_back))
            names.append(HELD_BACK)
        if not out.exists():
            os.rename(tmp, out)
        else:
            for name in names:
                os.replace(tmp / name, out / name)
            if HELD_BACK not in names and (out / HELD_BACK).exists():
                (out / HELD_BACK).unlink()
            shutil.rmtree(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {name: out / name for name in names}


def read_notifications(path: str | Path) -> Iterator[dict[str, Any]]:
    """The ``{exchange, routing_key, body}`` lines of a notifications file; a broken line is named."""
    with Path(path).open("rb") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                doc = orjson.loads(line)
            except orjson.JSONDecodeError:
                raise NotificationFileError(f"{path} line {number}: not JSON") from None
            if not isinstance(doc, dict) or set(doc) != {"exchange", "routing_key", "body"}:
                raise NotificationFileError(
                    f"{path} line {number}: expected exactly exchange, routing_key and body"
                )
            if not isinstance(doc["exchange"], str) or not isinstance(doc["routing_key"], str):
                raise NotificationFileError(f"{path} line {number}: exchange and routing_key must be strings")
            if not isinstance(doc["body"], dict | str):
                raise NotificationFileError(f"{path} line {number}: body must be an object or a string")
            yield doc
