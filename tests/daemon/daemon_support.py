"""Running ``tally run`` and the ``tally`` command as subprocesses, the way an operator does."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

GRACE_S = 3.0
# A daemon answers in about a second on a quiet host; a loaded two-core host (parallel suites,
# benches) took past 30 s to start it, failing tests that had nothing wrong.
START_TIMEOUT_S = float(os.environ.get("TALLY_TEST_DAEMON_START_TIMEOUT_S", "90"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def daemon_env(state_dir: Path, port: int, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(state_dir.parent),
        "TALLY_STATE_DIR": str(state_dir),
        "TALLY_REPORTING_HTTP_PORT": str(port),
        "TALLY_SHUTDOWN_GRACE_S": str(GRACE_S),
        # A worktree's tests run its own src (PYTHONPATH), not the checkout the venv installed.
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
        **extra,
    }


def tally(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    """``tally ARGV...`` with ``env``; the finished process (stdout, stderr, returncode)."""
    return subprocess.run(
        [sys.executable, "-m", "tally", *argv], env=env, capture_output=True, text=True, timeout=60
    )


def secret(env: dict[str, str], *argv: str) -> str:
    """The secret a ``tally token create`` / ``tally ingest-credential create`` prints once."""
    done = tally(env, *argv)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@dataclass
class Daemon:
    """A running ``tally run``: its base URL, and its exit code and log once stopped."""

    proc: subprocess.Popen[str]
    base_url: str
    code: int | None = None
    log: str = field(default="")

    def stop(self) -> int:
        """SIGTERM, wait for the drain; the exit code (the log is in ``self.log``)."""
        if self.code is None:
            self.proc.send_signal(signal.SIGTERM)
            self.code = self.proc.wait(timeout=GRACE_S + 10)
            self.log = self.proc.communicate()[1]
        return self.code


@contextmanager
def running_daemon(env: dict[str, str]) -> Iterator[Daemon]:
    """Start ``tally run`` with ``env`` and yield once its HTTP front end answers ``/healthz``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tally", "run"], env=env, stderr=subprocess.PIPE, text=True
    )
    daemon = Daemon(proc, f"http://127.0.0.1:{env['TALLY_REPORTING_HTTP_PORT']}")
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"tally run exited with {proc.returncode}: {proc.communicate()[1]}")
            try:
                if httpx.get(f"{daemon.base_url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"tally run did not answer /healthz within {START_TIMEOUT_S:g}s")
            time.sleep(0.1)
        yield daemon
    finally:
        if proc.poll() is None and daemon.code is None:
            proc.kill()
            proc.communicate()


def wait_until_ready(base_url: str, timeout_s: float = 20.0) -> dict[str, dict[str, object]]:
    """Poll ``/readyz`` until it answers 200; its checks."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = httpx.get(f"{base_url}/readyz", timeout=5)
        if answer.status_code == 200:
            checks: dict[str, dict[str, object]] = answer.json()["checks"]
            return checks
        if time.monotonic() > deadline:
            raise AssertionError(f"/readyz still {answer.status_code}: {answer.text}")
        time.sleep(0.1)
