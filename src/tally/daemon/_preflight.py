"""What ``tally run`` checks in the settings before anything starts, beyond each setting's own range.

A refusal is one line and exit code 2, and nothing was started (no state directory, no socket): a
daemon must never run half-configured. A warning is logged and the daemon starts. The port is
tried here, once, so that a port another process holds is one line naming the address rather than
the HTTP actor crashing until the supervisor gives up.
"""

from __future__ import annotations

import errno
import logging
import socket

from tally.app import http_sink_problem
from tally.config import Settings
from tally.store import UnsupportedStoreUrl, dialect_of

from ._collector import amqp_url_problem

log = logging.getLogger(__name__)


def refusal(settings: Settings) -> str | None:
    """Why the daemon must not start with ``settings`` (one line naming the variable), or None."""
    if settings.reporting_oidc_jwks_url is not None:
        # The spec: must be unset. OIDC is not supported, so a set value would be silently ignored.
        return "TALLY_REPORTING_OIDC_JWKS_URL is set, but OIDC is not supported: unset it"
    if settings.reporting_db_url is not None:
        try:
            dialect_of(settings.reporting_db_url.get_secret_value())
        except UnsupportedStoreUrl as exc:
            return f"TALLY_REPORTING_DB_URL: {exc}"
    if settings.reporting_db_url is None and settings.reporting_http_workers > 1:
        return (
            f"TALLY_REPORTING_HTTP_WORKERS={settings.reporting_http_workers}: the embedded SQLite store "
            "serves on one process; set 0 or 1, or TALLY_REPORTING_DB_URL (PostgreSQL)"
        )
    if settings.osc_amqp_url is not None:
        problem = http_sink_problem(settings) or amqp_url_problem(settings)
        if problem is not None:
            return problem
    return port_problem(settings.reporting_http_addr, settings.reporting_http_port)


def port_problem(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (naming the settings), or None; port 0 always can."""
    if port == 0:
        return None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            why = (
                "is already in use by another process"
                if exc.errno == errno.EADDRINUSE
                else f"cannot be listened on: {exc.strerror}"
            )
            return f"TALLY_REPORTING_HTTP_ADDR/TALLY_REPORTING_HTTP_PORT: {host}:{port} {why}"
    return None


def warn_about(settings: Settings) -> None:
    """Log the settings that work but are probably not what the operator meant."""
    if (
        settings.reporting_enabled
        and settings.reporting_auth_mode == "enforced"
        and settings.reporting_internal_token is None
    ):
        log.warning(
            "no internal token: TALLY_REPORTING_INTERNAL_TOKEN is unset, so every /internal route "
            "answers 401 (sync triggers, projection rebuild)"
        )
