"""Whether the outbox file can be written: the last write's outcome, said once per change of state.

A full disk, a file turned read-only or an I/O error on the outbox is an
outage, not a bug: the collector keeps the rows it could not commit in hand,
unacked, and tries again (``Consumer``), and the sender keeps a batch it could
not delete from the outbox (the sink answers the re-sent rows as duplicates).
This module names the fault for ``/readyz`` and the log ("the outbox cannot
write: disk full on PATH") and keeps ``tally_collector_outbox_write_failing``
at 1 while it lasts. The log says it once when the fault starts, once when its
cause changes, and once when a write commits again.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path

from . import _metrics

log = logging.getLogger(__name__)

# SQLite's primary result code (its extended codes keep it in the low byte) to the metric's reason
# and the words of the /readyz detail.
_CAUSES: dict[int, tuple[str, str]] = {
    sqlite3.SQLITE_FULL: ("disk_full", "disk full"),
    sqlite3.SQLITE_READONLY: ("read_only", "read-only file or filesystem"),
    sqlite3.SQLITE_IOERR: ("io_error", "I/O error"),
    sqlite3.SQLITE_CANTOPEN: ("cannot_open", "cannot open the file"),
    sqlite3.SQLITE_BUSY: ("locked", "locked by another process"),
    sqlite3.SQLITE_LOCKED: ("locked", "locked by another process"),
    sqlite3.SQLITE_PERM: ("permission", "permission denied"),
}
REASONS = ("disk_full", "read_only", "io_error", "cannot_open", "locked", "permission", "lost", "other")


class OutboxWriteError(Exception):
    """A write the outbox could not commit (rolled back); ``reason`` is one of ``REASONS``."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def classify(exc: sqlite3.Error, path: Path) -> OutboxWriteError:
    """The write error ``exc`` as the outbox names it: its reason and a one-line detail naming ``path``."""
    code = getattr(exc, "sqlite_errorcode", None)
    reason, words = _CAUSES.get(code & 0xFF if code is not None else -1, ("other", "write failed"))
    return OutboxWriteError(reason, f"the outbox cannot write: {words} on {path} ({exc})")


class WriteFaults:
    """The outcome of the outbox's last write. Invariant: ``problem`` is None iff the last write that
    checked its file at the path committed (or none was tried; a failure of any write counts), and the
    gauge says the same."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.problem: OutboxWriteError | None = None
        self.failing_since: float | None = None
        self.last_outcome_at: float | None = None
        _metrics.WRITE_FAILING.set(0)

    def failed(self, error: OutboxWriteError) -> None:
        _metrics.WRITE_ERRORS.labels(error.reason).inc()
        self.last_outcome_at = time.monotonic()
        previous = self.problem
        self.problem = error
        _metrics.WRITE_FAILING.set(1)
        if previous is None:
            self.failing_since = time.monotonic()
            log.warning("outbox: %s; consuming stops until a write commits again", error.detail)
        elif previous.reason != error.reason:
            log.warning("outbox: the fault changed: %s", error.detail)

    def succeeded(self) -> None:
        self.last_outcome_at = time.monotonic()
        if self.problem is None:
            return
        lasted = time.monotonic() - (self.failing_since or time.monotonic())
        log.warning(
            "outbox: writes commit again on %s after %.1f s (was: %s)", self.path, lasted, self.problem.reason
        )
        self.problem = None
        self.failing_since = None
        _metrics.WRITE_FAILING.set(0)
