"""How many processes ``tally run`` serves the Reporting API on (``TALLY_REPORTING_HTTP_WORKERS``).

Apart from ``_workers`` (which imports the HTTP stack) so that the package exports it cheaply.
"""

from __future__ import annotations

import os

from tally.config import Settings

MAX_DEFAULT_WORKERS = 4  # each opens its own pool of TALLY_REPORTING_DB_MAX_CONNS connections


def default_http_workers(*, postgresql: bool) -> int:
    """The HTTP processes ``tally run`` serves on when ``TALLY_REPORTING_HTTP_WORKERS`` is 0: the CPUs
    the daemon may run on, at most ``MAX_DEFAULT_WORKERS``, on PostgreSQL; 1 on SQLite (its one file
    takes one writer at a time, which more processes would only queue behind each other)."""
    if not postgresql:
        return 1
    return max(1, min(MAX_DEFAULT_WORKERS, len(os.sched_getaffinity(0))))


def http_workers(settings: Settings) -> int:
    """The HTTP processes of this daemon: the setting, or the host's default."""
    if settings.reporting_http_workers:
        return settings.reporting_http_workers
    return default_http_workers(postgresql=settings.reporting_db_url is not None)
