"""``tally run`` as systemd or an operator runs it: a subprocess on the embedded defaults.

It must come up with no server installed, tell a (fake) systemd READY=1, answer /healthz, /readyz and
/metrics, and on SIGTERM say STOPPING=1 and exit 0 within the grace period.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

GRACE_S = 3.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(tmp_path / "notify.sock"))
    sock.settimeout(20)
    yield sock
    sock.close()


def receive_until(sock: socket.socket, wanted: str) -> list[str]:
    """Every sd_notify message up to and including the one containing ``wanted``."""
    seen: list[str] = []
    while True:
        message = sock.recv(4096).decode()
        seen.append(message)
        if wanted in message.split("\n"):
            return seen


def tally_env(tmp_path: Path, port: int, **extra: str) -> dict[str, str]:
    passed = {name: os.environ[name] for name in ("PYTHONPATH",) if name in os.environ}
    return {
        **passed,
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "TALLY_STATE_DIR": str(tmp_path / "state"),
        "TALLY_REPORTING_HTTP_PORT": str(port),
        "TALLY_SHUTDOWN_GRACE_S": str(GRACE_S),
        **extra,
    }


def test_run_on_embedded_defaults_speaks_sd_notify_and_drains_on_sigterm(
    tmp_path: Path, notify_socket: socket.socket
) -> None:
    port = free_port()
    env = tally_env(
        tmp_path,
        port,
        NOTIFY_SOCKET=notify_socket.getsockname(),
        WATCHDOG_USEC="200000",
        TALLY_LOG_FORMAT="json",
        TALLY_REPORTNG_SYNC_BUDGET_S="30",  # a typo: warned about, not fatal
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "tally", "run"], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        ready = receive_until(notify_socket, "READY=1")
        assert "WATCHDOG=1" not in "\n".join(ready)  # READY comes first
        assert "WATCHDOG=1" in receive_until(notify_socket, "WATCHDOG=1")[-1]

        base = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{base}/healthz").status_code == 200
        readyz = httpx.get(f"{base}/readyz")
        assert readyz.status_code == 200
        assert readyz.json()["checks"]["actors"] == {"ok": True, "detail": "supervisor running"}
        metrics = httpx.get(f"{base}/metrics").text
        assert 'tally_actor_restarts_total{actor="http"} 0.0' in metrics
        assert "# TYPE tally_actor_mailbox_depth gauge" in metrics

        began = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        receive_until(notify_socket, "STOPPING=1")
        code = proc.wait(timeout=GRACE_S + 5)
        took = time.monotonic() - began
    finally:
        if proc.poll() is None:
            proc.kill()
        stderr = proc.communicate()[1]
    assert code == 0, stderr
    assert took < GRACE_S + 1
    lines = [json.loads(line) for line in stderr.splitlines()]
    messages = [entry["msg"] for entry in lines]
    assert "unknown setting ignored variable=TALLY_REPORTNG_SYNC_BUDGET_S (check the spelling)" in messages
    assert "tally ready" in messages
    assert any(m.startswith("draining signal=SIGTERM") for m in messages)
    assert messages[-1] == "tally exiting code=0"
    assert (tmp_path / "state").is_dir()


def test_sigint_drains_too(tmp_path: Path, notify_socket: socket.socket) -> None:
    env = tally_env(tmp_path, free_port(), NOTIFY_SOCKET=notify_socket.getsockname())
    proc = subprocess.Popen([sys.executable, "-m", "tally", "run"], env=env, stderr=subprocess.PIPE)
    try:
        receive_until(notify_socket, "READY=1")
        proc.send_signal(signal.SIGINT)
        receive_until(notify_socket, "STOPPING=1")
        assert proc.wait(timeout=GRACE_S + 5) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_bad_setting_refuses_startup_with_one_line(tmp_path: Path) -> None:
    env = tally_env(tmp_path, free_port(), TALLY_REPORTING_SYNC_SETTLE_S="-1")
    done = subprocess.run(
        [sys.executable, "-m", "tally", "run"], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2
    assert done.stderr == "tally: TALLY_REPORTING_SYNC_SETTLE_S=-1 is outside the allowed range 0..3600\n"
    assert not (tmp_path / "state").exists()  # never started half-configured


def test_bad_clouds_config_refuses_startup_naming_file_and_key(tmp_path: Path) -> None:
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(
        "clouds:\n  - cloud: os-a\n    platform: openstack\n    adapter: openstack\n    colour: red\n"
    )
    env = tally_env(tmp_path, free_port(), TALLY_REPORTING_CLOUDS_CONFIG=str(clouds))
    done = subprocess.run(
        [sys.executable, "-m", "tally", "run"], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"tally: {clouds}")
    assert "'colour'" in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert not (tmp_path / "state").exists()


def test_a_taken_port_refuses_startup_with_one_line_naming_the_address(tmp_path: Path) -> None:
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    port = blocker.getsockname()[1]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tally", "run"],
            env=tally_env(tmp_path, port),
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        blocker.close()
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"tally: TALLY_REPORTING_HTTP_ADDR/TALLY_REPORTING_HTTP_PORT: 127.0.0.1:{port} "
        "is already in use by another process"
    ]
