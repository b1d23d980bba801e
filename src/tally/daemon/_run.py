"""``tally run``: the daemon's life from settings to exit code.

Exit codes: 0 after a drain on SIGTERM/SIGINT; 1 when the supervisor gave up (restart intensity
exceeded) or a second signal forced the stop; 2 when the settings were refused before anything
started (``_preflight``), the broker refused the collector's login, vhost or set-up
(``broker_refusal``), the store refused the login or stayed away past its bound, or its schema
was migrated by a newer build (``_startup``), or the store refuses the retention policy
(``_events_upkeep``). A non-zero exit is the signal for systemd (``Restart=on-failure``) or the
container runtime to start a fresh process.
"""

from __future__ import annotations

import logging
import signal
import socket
import sys

import anyio

from tally.actors import Supervisor, SupervisorGaveUp
from tally.config import Settings
from tally.http import CheckResult, Readiness, listen_socket
from tally.store import dialect_of

from ._collector import broker_refusal
from ._events_upkeep import retention_refusal_at_start
from ._notify import Notifier
from ._preflight import refusal, warn_about
from ._startup import StoreWait, schema_refusal, wait_for_store
from ._tree import build_tree, needs_store, serves_with_workers

log = logging.getLogger(__name__)


async def run_daemon(settings: Settings, *, notifier: Notifier | None = None) -> int:
    """Build the actor tree for ``settings`` and run it until a signal drains it; returns the exit code."""
    refused = refusal(settings)
    if refused is not None:
        print(f"tally: {refused}", file=sys.stderr)
        return 2
    refused = await broker_refusal(settings)
    if refused is not None:
        log.error("tally not starting: %s", refused)
        print(f"tally: {refused}", file=sys.stderr)
        return 2
    warn_about(settings)
    notifier = notifier or Notifier.from_environ()
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    waited = await wait_for_store(settings, notifier) if needs_store(settings) else StoreWait(None)
    try:
        problem = waited.problem
        if problem is None and needs_store(settings):
            problem = await schema_refusal(settings)
        if problem is None and needs_store(settings):
            problem = await retention_refusal_at_start(settings)
        if problem is not None:
            log.error("tally not starting: %s", problem)
            print(f"tally: {problem}", file=sys.stderr)
            return 2
        # The HTTP workers accept from the front end's socket (``_workers``): it is opened here,
        # before any of them, and kept across restarts of the front end.
        sock = waited.sock
        if sock is None and serves_with_workers(settings):
            sock = listen_socket(settings.reporting_http_addr, settings.reporting_http_port)
        try:
            return await _run_tree(settings, notifier, sock)
        finally:
            if sock is not None and sock is not waited.sock:
                sock.close()
    finally:
        if waited.sock is not None:
            waited.sock.close()


async def _run_tree(settings: Settings, notifier: Notifier, sock: socket.socket | None) -> int:
    readiness = Readiness()
    supervisor = Supervisor(
        build_tree(settings, readiness, notifier, listening=sock), shutdown_grace_s=settings.shutdown_grace_s
    )

    async def actors_started() -> CheckResult:
        state = supervisor.statistics().state.value
        return CheckResult(supervisor.ready, f"supervisor {state}")

    readiness.register("actors", actors_started)
    exit_code = 0

    async def supervise(*, task_status: anyio.abc.TaskStatus[None]) -> None:
        nonlocal exit_code
        try:
            await supervisor.run(task_status=task_status)
        except SupervisorGaveUp as exc:
            log.error("daemon exiting after supervisor gave up: %s", exc)
            exit_code = 1
        finally:
            tg.cancel_scope.cancel()

    async def on_signals() -> None:
        nonlocal exit_code
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                if supervisor.statistics().state.value in {"stopping", "stopped"}:
                    log.warning("second signal, stopping at once signal=%s", signal.Signals(signum).name)
                    exit_code = 1
                    tg.cancel_scope.cancel()
                    return
                log.info(
                    "draining signal=%s grace_s=%g", signal.Signals(signum).name, settings.shutdown_grace_s
                )
                notifier.notify("STOPPING=1")
                supervisor.stop()

    log.info(
        "tally starting store=%s http=%s:%d state_dir=%s actors=%s",
        dialect_of(settings.store_url),
        settings.reporting_http_addr,
        settings.reporting_http_port,
        settings.state_dir,
        ",".join(child.name for child in supervisor.statistics().children),
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(on_signals)
        # The probes /readyz answers from (the store's and the outbox's writes): before the actors, so
        # that a fault at start is named as soon as an actor registered its probe.
        tg.start_soon(readiness.run)
        await tg.start(supervise)
        if supervisor.ready:
            notifier.notify("READY=1", "STATUS=running")
            log.info("tally ready")
            tg.start_soon(notifier.run_watchdog)
    log.info("tally exiting code=%d", exit_code)
    return exit_code
