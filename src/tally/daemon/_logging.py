"""Logging setup: one line per event to stderr, plain text or JSON (``TALLY_LOG_FORMAT``).

stderr, because systemd's journal and container runtimes collect it without any file to rotate.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

from tally.core import format_instant

PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "logger", "msg"}`` plus ``"exc"`` when an exception is attached."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": format_instant(datetime.fromtimestamp(record.created, UTC)),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def setup_logging(level: str = "INFO", log_format: str = "plain") -> None:
    """Route every logger to one stderr handler at ``level``; replaces earlier handlers."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(PLAIN_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper() if level.upper() in logging.getLevelNamesMapping() else "INFO")
