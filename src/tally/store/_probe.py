"""Does the store answer? One connection attempt, told apart into "try again" and "will never work".

The daemon probes before it opens the store for real (``tally.daemon._startup``): a PostgreSQL that
is still starting, or not reachable yet at boot, is worth waiting for; a server that answered and
refused (no such role, no such database, a wrong password, no pg_hba.conf entry) is an operator's
fix, and waiting for it would only hide the message (a pool retrying a refused login looked like a
15 s timeout). The probe's one connection is closed at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from ._interface import UnsupportedStoreUrl
from ._open import dialect_of, open_store
from ._pg_connection import describe_url
from ._read_only import writable_target

# FATAL answers of a server that will accept the same login later (SQLSTATE 57P03, 53300).
_TRANSIENT_FATAL = ("starting up", "shutting down", "in recovery", "too many", "remaining connection slots")


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """``ok``, or why not (``detail``, one line, no password) and whether waiting can help."""

    ok: bool
    detail: str
    permanent: bool = False


def classify_connect_error(message: str) -> bool:
    """True when a connection error's text says the server answered and refused for good."""
    if "FATAL:" not in message:
        return False  # refused, timed out, unresolvable: the network or a server not up yet
    return not any(marker in message for marker in _TRANSIENT_FATAL)


def _one_line(message: str) -> str:
    return " ".join(part.strip() for part in message.strip().splitlines() if part.strip())


async def probe_store(url: str, *, timeout_s: float = 5.0) -> ProbeResult:
    """One attempt at the store ``url`` names; never raises for a store that does not answer."""
    try:
        dialect = dialect_of(url)
    except UnsupportedStoreUrl as exc:
        return ProbeResult(False, str(exc), permanent=True)
    if dialect == "sqlite":
        try:
            async with open_store(url):
                return ProbeResult(True, "sqlite opens")
        except Exception as exc:  # a file that cannot be opened is not going to open by waiting
            return ProbeResult(False, f"cannot open SQLite: {exc}", permanent=True)
    where = describe_url(url)
    try:
        connection = await psycopg.AsyncConnection.connect(
            writable_target(url), connect_timeout=max(1, round(timeout_s))
        )
    except psycopg.Error as exc:
        message = str(exc)
        return ProbeResult(
            False, f"PostgreSQL at {where}: {_one_line(message)}", permanent=classify_connect_error(message)
        )
    await connection.close()
    return ProbeResult(True, f"PostgreSQL at {where} answers")
