"""Waiting for the store at start: the daemon answers its probes meanwhile, and gives up after a bound.

A PostgreSQL that is still starting, or not reachable yet at boot, is worth waiting for; one that
answered and refused (no such role or database, a wrong password) is not, and neither is a store
that stays away longer than ``TALLY_REPORTING_DB_START_TIMEOUT_S``: both end the start with one
line and exit 2, so that systemd's ``Restart=on-failure`` or the container runtime takes over.

While it waits the daemon is alive and says so: ``/healthz`` answers 200 and ``/readyz`` 503 with
the store's last error, on the configured port (so a liveness probe does not kill a process that is
only waiting); the listening socket is then handed to the real front end (``StoreWait.sock``), so
no connection is refused in between. systemd hears ``EXTEND_TIMEOUT_USEC`` so that its start
timeout does not kill it first. Attempts are spaced by an exponential backoff with full jitter
(``backoff_delays``), so that replicas restarted together do not probe the database in step. The
first attempt costs nothing extra: the health server starts only once it failed.

A store that answers with a schema migrated by a newer Tally (a version above every migration this
build has) is refused too (``schema_refusal``): this build cannot know what the newer migrations
changed, and writing through tables it does not understand could corrupt what the newer one reads.
"""

from __future__ import annotations

import logging
import random
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

import anyio

from tally.config import Settings
from tally.http import CheckResult, Readiness, listen_socket, serve_quart
from tally.store import ProbeResult, open_store, probe_store

from ._frontend import health_app
from ._notify import Notifier

log = logging.getLogger(__name__)

BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 30.0


def backoff_delays(
    rng: random.Random, *, first_s: float = BACKOFF_FIRST_S, max_s: float = BACKOFF_MAX_S
) -> Iterator[float]:
    """Full jitter: attempt n waits uniform(0, min(max_s, first_s * 2**n)); never more than ``max_s``."""
    ceiling = first_s
    while True:
        yield rng.uniform(0, ceiling)
        ceiling = min(max_s, ceiling * 2)


@dataclass(frozen=True)
class StoreWait:
    """How the wait ended: ``problem`` is the line to print before exiting 2 (None: the store
    answers); ``sock`` the socket the probes listened on, for the front end (None if none was opened).
    The caller closes it."""

    problem: str | None
    sock: socket.socket | None = None


@dataclass
class _Waiting:
    """What ``/readyz`` says while waiting."""

    attempts: int = 0
    last: ProbeResult | None = None
    next_in_s: float = 0.0


async def wait_for_store(
    settings: Settings, notifier: Notifier, *, rng: random.Random | None = None
) -> StoreWait:
    """Once the store answers, or the start must end (refused, or the bound): see ``StoreWait``."""
    url = settings.store_url
    first = await probe_store(url)
    if first.ok:
        return StoreWait(None)
    if first.permanent:
        return StoreWait(f"TALLY_REPORTING_DB_URL: {first.detail}")
    bound_s = settings.reporting_db_start_timeout_s
    if bound_s == 0:
        return StoreWait(
            f"TALLY_REPORTING_DB_URL: {first.detail} (TALLY_REPORTING_DB_START_TIMEOUT_S=0: not waiting)"
        )
    waiting = _Waiting(attempts=1, last=first)
    readiness = Readiness()

    async def store_check() -> CheckResult:
        detail = waiting.last.detail if waiting.last else "not tried yet"
        return CheckResult(
            False,
            f"waiting for the store: {detail} (attempt {waiting.attempts}, next in "
            f"{waiting.next_in_s:.0f} s, giving up after TALLY_REPORTING_DB_START_TIMEOUT_S={bound_s})",
        )

    readiness.register("store", store_check)
    deadline = time.monotonic() + bound_s
    outcome: str | None = None
    # Handed to the HTTP workers (``_workers``) once the front end serves on it.
    sock = listen_socket(settings.reporting_http_addr, settings.reporting_http_port)
    async with anyio.create_task_group() as tg:
        await tg.start(
            partial(
                serve_quart,
                health_app(settings, readiness),
                settings.reporting_http_addr,
                settings.reporting_http_port,
                graceful_timeout_s=1.0,
                sock=sock,
            )
        )
        tg.start_soon(notifier.keep_extending_start)
        delays = backoff_delays(rng or random.Random())
        while True:
            assert waiting.last is not None
            log.warning(
                "store not answering attempt=%d detail=%s giving_up_in_s=%.0f",
                waiting.attempts,
                waiting.last.detail,
                max(0.0, deadline - time.monotonic()),
            )
            notifier.notify(f"STATUS=waiting for the store: {waiting.last.detail}")
            waiting.next_in_s = min(next(delays), max(0.0, deadline - time.monotonic()))
            await anyio.sleep(waiting.next_in_s)
            waiting.last = await probe_store(url)
            waiting.attempts += 1
            if waiting.last.ok:
                log.info("store answers after attempts=%d", waiting.attempts)
                break
            if waiting.last.permanent:
                outcome = f"TALLY_REPORTING_DB_URL: {waiting.last.detail}"
                break
            if time.monotonic() >= deadline:
                outcome = (
                    f"TALLY_REPORTING_DB_URL: the store did not answer within "
                    f"TALLY_REPORTING_DB_START_TIMEOUT_S={bound_s} ({waiting.attempts} attempts): "
                    f"{waiting.last.detail}"
                )
                break
        tg.cancel_scope.cancel()
    if outcome is not None:
        sock.close()
        return StoreWait(outcome)
    return StoreWait(None, sock)


async def schema_refusal(settings: Settings) -> str | None:
    """The line to exit 2 with when the store's schema is newer than this build knows, else None."""
    async with open_store(settings.store_url, max_conns=1) as store:
        status = await store.schema_status()
    if not status.ahead:
        return None
    return (
        f"the database schema is at version {status.current}, newer than this build knows "
        f"(its migrations end at {status.latest}): a newer Tally migrated it; run that build, "
        f"or roll the schema back with its `tally migrate down {status.latest}`"
    )
