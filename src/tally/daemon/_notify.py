"""sd_notify: telling systemd (``Type=notify``) that we are ready, stopping, and alive.

The protocol is one datagram per message to the unix socket named by ``NOTIFY_SOCKET`` (a leading
``@`` names an abstract socket). With no ``NOTIFY_SOCKET`` every call is a no-op, so the daemon runs
the same under systemd, in a container or in a terminal. ``WATCHDOG_USEC`` asks for ``WATCHDOG=1``
pings; we send them at half that interval, as sd_watchdog_enabled(3) advises. Work that may outlast
the unit's start timeout (migrations, waiting for the store) runs beside ``keep_extending_start``,
which asks for ``EXTEND_TIMEOUT_USEC`` more time until it is cancelled.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

import anyio

log = logging.getLogger(__name__)

# How much more start time each EXTEND_TIMEOUT_USEC asks for; asked again well before it runs out.
EXTEND_WINDOW_S = 30.0


class Notifier:
    """Sends sd_notify messages to ``address``, or nothing when it is None."""

    def __init__(self, address: str | None, *, watchdog_usec: int | None = None) -> None:
        self.address = address
        self.watchdog_usec = watchdog_usec

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Notifier:
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET") or None
        watchdog: int | None = None
        pid = env.get("WATCHDOG_PID")
        usec = env.get("WATCHDOG_USEC", "")
        if usec.isdigit() and int(usec) > 0 and (not pid or pid == str(os.getpid())):
            watchdog = int(usec)
        return cls(address, watchdog_usec=watchdog)

    @property
    def watchdog_interval_s(self) -> float | None:
        return None if self.watchdog_usec is None else self.watchdog_usec / 2_000_000

    def notify(self, *states: str) -> None:
        """Send ``states`` (e.g. ``READY=1``) as one message; failures are logged, never raised."""
        if self.address is None:
            return
        target = "\0" + self.address[1:] if self.address.startswith("@") else self.address
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.sendto("\n".join(states).encode(), target)
        except OSError as exc:
            log.warning("sd_notify failed socket=%s error=%s", self.address, exc)

    async def run_watchdog(self) -> None:
        """Ping ``WATCHDOG=1`` at half the watchdog interval until cancelled; returns at once if unset."""
        interval = self.watchdog_interval_s
        if interval is None or self.address is None:
            return
        log.info("watchdog pinging interval_s=%.3f", interval)
        while True:
            self.notify("WATCHDOG=1")
            await anyio.sleep(interval)

    async def keep_extending_start(self, window_s: float = EXTEND_WINDOW_S) -> None:
        """Ask for ``window_s`` more start time every third of it until cancelled (sd_notify(3))."""
        if self.address is None:
            return
        while True:
            self.notify(f"EXTEND_TIMEOUT_USEC={int(window_s * 1_000_000)}")
            await anyio.sleep(window_s / 3)
