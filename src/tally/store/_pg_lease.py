"""The renewal of a PostgreSQL sync lock's lease, on a thread of its own.

The lease is the lock session's ``idle_session_timeout`` (``_pg_sync_lock``): the holder must send a
query on that session every third of it. Sent from the run's own event loop, the renewal waited for
the loop to get a turn, and a step that held the CPU (a million-resource diff, the decoding of the
projection) for longer than the lease cost the run its lock while it was still running. The renewal
therefore runs on a thread that owns the session between the take and the release (the holder's work
never uses that connection): it drives the query through the connection's libpq handle, with a bound
on the server's answer, and needs nothing of the loop but to hear, when the session is gone, that the
block it guards must be cancelled.
"""

from __future__ import annotations

import contextlib
import select
import threading
import time
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import psycopg
from psycopg import pq

from ._pool_wait import one_line

_PING = b"SELECT 1"


class LeaseRenewal:
    """Sends a query on ``conn``'s session every ``every_s`` (a third of the lease) from a thread,
    until ``stop``; when the session is gone (or does not answer within the lease), records why in
    ``lost`` and cancels ``block`` on the loop that started the renewal."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], every_s: float, block: anyio.CancelScope) -> None:
        self._pgconn = conn.pgconn
        self._every_s = every_s
        self._block = block
        self._token = anyio.lowlevel.current_token()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tally sync lock lease", daemon=True)
        self.lost: str | None = None

    def start(self) -> None:
        self._thread.start()

    async def stop(self) -> None:
        """End the renewal; once this returns the connection is the loop's again. Waits at most for one
        renewal under way (bounded by the lease)."""
        self._stop.set()
        if self._thread.is_alive():
            await anyio.to_thread.run_sync(self._thread.join)

    def _run(self) -> None:
        while not self._stop.wait(self._every_s):
            try:
                # An answer may take up to a whole lease: a starved host delays this thread, and a
                # session that is only slow to answer still holds the lock.
                _ping(self._pgconn, time.monotonic() + 3 * self._every_s)
            except (psycopg.Error, TimeoutError) as exc:
                self.lost = one_line(exc)
                # A loop that has ended (RuntimeError) ended the block with it: nothing left to cancel.
                with contextlib.suppress(RuntimeError):
                    anyio.from_thread.run_sync(self._block.cancel, token=self._token)
                return


def _ping(pgconn: pq.abc.PGconn, deadline: float) -> None:
    """One query on the (non-blocking) session and all its results, by ``deadline``; a session the
    server ended raises ``psycopg.OperationalError``."""
    pgconn.send_query(_PING)
    while pgconn.flush():
        _wait(pgconn.socket, select.POLLOUT, deadline)
    failure: str | None = None
    while True:
        pgconn.consume_input()
        if pgconn.is_busy():
            _wait(pgconn.socket, select.POLLIN, deadline)
            continue
        result = pgconn.get_result()
        if result is None:
            break
        if result.status != pq.ExecStatus.TUPLES_OK:
            message = result.error_message.decode(errors="replace").strip()
            failure = message or f"the renewal ended {pq.ExecStatus(result.status).name}"
    if failure is not None:
        raise psycopg.OperationalError(failure)


def _wait(fd: int, event: int, deadline: float) -> None:
    poller = select.poll()
    poller.register(fd, event)
    left = deadline - time.monotonic()
    if left <= 0 or not poller.poll(left * 1000):
        raise TimeoutError("the server did not answer the renewal of the lease in time")
