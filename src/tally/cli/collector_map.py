"""``tally collector map``: the canonical events that captured notification bodies map to (the collector's
pure mapping, ``map_notification``), booking nothing."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tally.collector import Mapped, Skipped, map_notification
from tally.config import ConfigError, load_settings


def register(sub: Any) -> None:
    """Add ``map`` to ``tally collector``'s subparsers."""
    mapper = sub.add_parser(
        "map",
        help="print the canonical events captured notification bodies map to",
        description="Each FILE holds one body, or JSON lines of bodies or of {exchange, routing_key, body}.",
    )
    mapper.add_argument("files", nargs="+", type=Path, metavar="FILE")
    mapper.add_argument("--cloud", default=None, help="the cloud to stamp (default TALLY_OSC_CLOUD)")
    mapper.set_defaults(handler=map_command)


def _bodies(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, body) for every body the file holds."""
    text = path.read_bytes()
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    else:
        yield str(path), _unwrap_capture(whole)
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            yield f"{path}:{number}", line
            continue
        yield f"{path}:{number}", _unwrap_capture(item)


def _unwrap_capture(item: Any) -> Any:
    if isinstance(item, dict) and "body" in item and "routing_key" in item:
        return item["body"]
    return item


def map_command(args: argparse.Namespace) -> int:
    try:
        cloud = args.cloud or load_settings().osc_cloud
    except ConfigError as exc:
        print(f"tally collector map: error: {exc}", file=sys.stderr)
        return 2
    code = 0
    for path in args.files:
        try:
            bodies = list(_bodies(path))
        except OSError as exc:
            print(f"tally collector map: cannot read {path}: {exc.strerror}", file=sys.stderr)
            code = 1
            continue
        for where, body in bodies:
            if isinstance(body, str | bytes | dict):
                outcome = map_notification(body, cloud=cloud)
            else:
                outcome = map_notification(json.dumps(body), cloud=cloud)
            if isinstance(outcome, Mapped):
                print(json.dumps(outcome.event, sort_keys=True))
            elif isinstance(outcome, Skipped):
                print(
                    f"{where}: skipped event_type={outcome.event_type} reason={outcome.reason}",
                    file=sys.stderr,
                )
            else:
                print(f"{where}: unparseable reason={outcome.reason} {outcome.detail}", file=sys.stderr)
    return code
