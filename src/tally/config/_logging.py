"""Logging setup: one line per event to stderr, plain text or JSON (``TALLY_LOG_FORMAT``).

stderr, because systemd's journal and container runtimes collect it without any file to rotate.
When stderr is the journal's stream (systemd sets ``JOURNAL_STREAM`` to its device and inode), each
line starts with its syslog priority, ``<4>`` for a warning (sd-daemon(3)): journald strips the
prefix and files the line at that priority, so ``journalctl -p warning`` shows Tally's warnings.
Elsewhere (a terminal, a container log) nothing is added.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TextIO

from tally.core import format_instant

PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
THIRD_PARTY_REQUEST_LOGGERS = ("httpx", "httpcore", "keystoneauth", "openstack", "urllib3")


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


# syslog(3) priorities of the logging levels: DEBUG 7, INFO 6, WARNING 4, ERROR 3, CRITICAL 2.
PRIORITIES = {logging.DEBUG: 7, logging.INFO: 6, logging.WARNING: 4, logging.ERROR: 3, logging.CRITICAL: 2}


def priority_of(levelno: int) -> int:
    """The syslog priority of a level; a level between two named ones takes the lower one's."""
    return next((p for level, p in sorted(PRIORITIES.items(), reverse=True) if levelno >= level), 7)


class JournalPriorityFormatter(logging.Formatter):
    """``inner``'s text with ``<priority>`` before each line (a traceback's lines keep its priority)."""

    def __init__(self, inner: logging.Formatter) -> None:
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        prefix = f"<{priority_of(record.levelno)}>"
        return "\n".join(prefix + line for line in self.inner.format(record).split("\n"))


def writes_to_journal(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """True when ``stream`` is the journal's stream that ``JOURNAL_STREAM`` (``dev:inode``) names."""
    named = (os.environ if environ is None else environ).get("JOURNAL_STREAM", "")
    try:
        device, inode = (int(part) for part in named.split(":"))
        status = os.fstat(stream.fileno())
    except (ValueError, OSError):
        return False
    return (status.st_dev, status.st_ino) == (device, inode)


def setup_logging(level: str = "INFO", log_format: str = "plain") -> None:
    """Route every logger to one stderr handler at ``level``; replaces earlier handlers."""
    handler = logging.StreamHandler(sys.stderr)
    formatter = JsonFormatter() if log_format == "json" else logging.Formatter(PLAIN_FORMAT)
    if writes_to_journal(sys.stderr):
        formatter = JournalPriorityFormatter(formatter)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper() if level.upper() in logging.getLevelNamesMapping() else "INFO")
    # A request line per call of the OpenStack APIs drowned the daemon's own; TALLY_LOG_LEVEL=DEBUG
    # shows them again.
    quiet = logging.NOTSET if root.level <= logging.DEBUG else logging.WARNING
    for chatty in THIRD_PARTY_REQUEST_LOGGERS:
        logging.getLogger(chatty).setLevel(quiet)
