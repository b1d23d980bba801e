"""``tally collector dead-letters`` and ``tally collector replay``: the events the sink could not take.

Both open the outbox file (TALLY_OSC_BUFFER_PATH, else the state directory's
outbox.sqlite3) and may run while the collector runs: SQLite serialises the
writes, and the running sender counts replayed rows within one flush interval.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tally.config import ConfigError, load_settings
from tally.outbox import DeadLetterRow, open_outbox


def register(sub: Any) -> None:
    """Add the two subcommands to ``tally collector``'s subparsers."""
    lister = sub.add_parser(
        "dead-letters",
        help="list the events the sink could not take (set aside in the outbox file)",
        description="One line per dead-lettered event: when, event id, type, resource, reason.",
    )
    lister.add_argument("--json", action="store_true", help="JSON lines, the stored event included")
    lister.set_defaults(handler=list_command)
    replay = sub.add_parser(
        "replay",
        help="move dead-lettered events back to the outbox for delivery",
        description="Put the named dead letters (or --all) back at the outbox's tail.",
    )
    replay.add_argument("event_ids", nargs="*", metavar="EVENT_ID")
    replay.add_argument("--all", action="store_true", help="replay every dead letter")
    replay.set_defaults(handler=replay_command)


def _instant(unix: float) -> str:
    return datetime.fromtimestamp(unix, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _line(row: DeadLetterRow) -> str:
    try:
        event = json.loads(row.body)
    except ValueError:
        event = {}
    resource = f"{event.get('resource_type', '?')}/{event.get('resource_id', '?')}"
    return (
        f"{_instant(row.dead_lettered_at)} {row.event_id} {event.get('event_type', '?')} {resource} "
        f"reason={row.reason}"
    )


def _outbox_path(command: str) -> Path | None:
    """The configured outbox file, or None after saying in one line why the settings are refused."""
    try:
        return load_settings().outbox_path
    except ConfigError as exc:
        print(f"tally collector {command}: error: {exc}", file=sys.stderr)
        return None


async def list_command(args: argparse.Namespace) -> int:
    path = _outbox_path("dead-letters")
    if path is None:
        return 2
    async with open_outbox(path) as outbox:
        rows = await outbox.dead_letters()
    for row in rows:
        if args.json:
            record = {
                "event_id": row.event_id,
                "dead_lettered_at": _instant(row.dead_lettered_at),
                "enqueued_at": _instant(row.enqueued_at),
                "reason": row.reason,
                "event": json.loads(row.body),
            }
            print(json.dumps(record, sort_keys=True))
        else:
            print(_line(row))
    print(f"{len(rows)} dead-lettered event(s) in {path}", file=sys.stderr)
    return 0


async def replay_command(args: argparse.Namespace) -> int:
    if bool(args.event_ids) == bool(args.all):
        print("tally collector replay: error: name EVENT_IDs or give --all (not both)", file=sys.stderr)
        return 2
    path = _outbox_path("replay")
    if path is None:
        return 2
    async with open_outbox(path) as outbox:
        moved = await outbox.replay(None if args.all else args.event_ids)
    unknown = sorted(set(args.event_ids) - set(moved))
    for event_id in moved:
        print(f"replayed {event_id}")
    if unknown:
        print(f"tally collector replay: error: no dead letter {', '.join(unknown)}", file=sys.stderr)
        return 1
    return 0
