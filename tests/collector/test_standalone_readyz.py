"""``tally collector`` serves ``/readyz`` as the daemon does: the ``collector`` check and the ``outbox``
probe of ``tally.daemon.collector_checks``, the probe run in the background, and the gauge
``tally_ready{check}`` on ``/metrics`` kept by the prober before anyone asks ``/readyz``."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _gauge(metrics: str, check: str) -> str | None:
    prefix = f'tally_ready{{check="{check}"}} '
    return next((line[len(prefix) :] for line in metrics.splitlines() if line.startswith(prefix)), None)


def test_the_standalone_collector_answers_readyz_from_the_daemons_checks(tmp_path: Path) -> None:
    port = _free_port()
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"),
        "TALLY_STATE_DIR": str(tmp_path / "state"),
        # Nothing listens on port 1: not ready, saying why, while the outbox writes.
        "TALLY_OSC_AMQP_URL": "amqp://guest:guest@127.0.0.1:1/",
        "TALLY_OSC_REPORTING_URL": "https://reporting.example",
        "TALLY_OSC_HTTP_ADDR": "127.0.0.1",
        "TALLY_OSC_HTTP_PORT": str(port),
    }
    log = tmp_path / "collector.log"
    with log.open("w") as out:
        command = [sys.executable, "-m", "tally", "collector"]
        process = subprocess.Popen(command, env=env, stderr=out, stdout=out)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        metrics = ""
        while time.monotonic() < deadline:
            assert process.poll() is None, log.read_text()
            try:
                metrics = httpx.get(f"{base}/metrics", timeout=2).text
            except httpx.TransportError:
                metrics = ""
            if _gauge(metrics, "collector") is not None:
                break
            time.sleep(0.2)
        # Set by the prober: nothing asked /readyz yet.
        assert (_gauge(metrics, "collector"), _gauge(metrics, "outbox")) == ("0.0", "1.0"), metrics
        took = []
        with httpx.Client(timeout=5) as client:
            for _ in range(20):
                began = time.perf_counter()
                answer = client.get(f"{base}/readyz")
                took.append(time.perf_counter() - began)
        assert answer.status_code == 503
        checks = answer.json()["checks"]
        assert set(checks) == {"collector", "outbox"}
        assert checks["outbox"] == {"ok": True, "detail": "writes commit"}
        assert not checks["collector"]["ok"] and "127.0.0.1:1" in checks["collector"]["detail"], checks
        # The better half within 100 ms: a loaded machine stalls some requests, a wait on the outbox
        # (its probe's 2 s deadline) would stall them all.
        assert sorted(took)[len(took) // 2] < 0.1, took
        assert httpx.get(f"{base}/healthz", timeout=5).json()["status"] in {"ok", "unhealthy"}
    finally:
        process.terminate()
        code = process.wait(timeout=30)
    assert code == 0, log.read_text()
