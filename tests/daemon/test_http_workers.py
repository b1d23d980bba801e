"""``tally run`` with HTTP workers (``TALLY_REPORTING_HTTP_WORKERS``): processes sharing the daemon's socket.

The kernel gives each connection to whichever process accepts it, so a test that needs a request
answered by a worker opens connections until one is held by a worker (``held_by``: the process
with the connection's socket among its descriptors) and sends its requests on it.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from daemon_fakecloud import fake_cloud, write_clouds_yaml
from daemon_support import daemon_env, free_port, running_daemon, secret, tally, wait_until_ready

from tally.daemon._worker import ToOwner

INTERNAL = "internal-secret-for-tests"


def children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def held_by(conn: socket.socket, pids: list[int]) -> int | None:
    """Which of ``pids`` holds the server end of ``conn``."""
    client_port = conn.getsockname()[1]
    server_port = conn.getpeername()[1]
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote = fields[1].split(":")[1], fields[2].split(":")[1]
        if int(local, 16) == server_port and int(remote, 16) == client_port:
            inode = fields[9]
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                if os.readlink(fd) == f"socket:[{inode}]":
                    return pid
            except OSError:
                continue
    return None


def ask(conn: socket.socket, method: str, path: str, token: str = "", body: bytes = b"") -> tuple[int, bytes]:
    """One HTTP/1.1 request on the keep-alive ``conn``; the status and body of its answer."""
    auth = f"authorization: Bearer {token}\r\n" if token else ""
    conn.sendall(
        f"{method} {path} HTTP/1.1\r\nhost: tally\r\n{auth}content-length: {len(body)}\r\n"
        f"content-type: application/json\r\n\r\n".encode()
        + body
    )
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    length = next(int(h.split(":", 1)[1]) for h in lines[1:] if h.lower().startswith("content-length:"))
    while len(rest) < length:
        rest += conn.recv(65536)
    return int(lines[0].split()[1]), rest


def connection_held_by(port: int, wanted: set[int], everyone: list[int]) -> socket.socket:
    """A keep-alive connection to the daemon that one of ``wanted`` accepted."""
    for _ in range(200):
        conn = socket.create_connection(("127.0.0.1", port), timeout=40)
        assert ask(conn, "GET", "/healthz")[0] == 200  # accepted and answered: the holder is known
        if held_by(conn, everyone) in wanted:
            return conn
        conn.close()
    raise AssertionError(f"no connection was accepted by {wanted} in 200 tries")


def http_requests(metrics: str, route: str) -> float:
    """The GET answers 200 of ``route`` (one line: the processes' counts are one series)."""
    wanted = {f'route="{route}"', 'method="GET"', 'status="200"'}
    lines = [
        line
        for line in metrics.splitlines()
        if line.startswith("tally_http_requests_total{")
        and set(line.split("{", 1)[1].split("}", 1)[0].split(",")) == wanted
    ]
    assert len(lines) == 1, lines
    return float(lines[0].split()[-1])


def test_workers_serve_the_api_and_ask_the_main_process_for_what_it_owns(tmp_path: Path, pg_url: str) -> None:
    with fake_cloud() as base_url:
        clouds_yaml = write_clouds_yaml(tmp_path, base_url)
        config = tmp_path / "tally-clouds.yaml"
        # Synced only on request (interval 0): the one run is the trigger a worker forwards.
        entry = {"cloud": "os-fake", "platform": "openstack", "adapter": "openstack", "sync_interval_s": 0}
        config.write_text(yaml.safe_dump({"clouds": [{**entry, "adapter_config": {"os_cloud": "admin"}}]}))
        port = free_port()
        env = daemon_env(
            tmp_path / "state",
            port,
            TALLY_REPORTING_DB_URL=pg_url,
            TALLY_REPORTING_HTTP_WORKERS="3",
            TALLY_REPORTING_INTERNAL_TOKEN=INTERNAL,
            TALLY_REPORTING_CLOUDS_CONFIG=str(config),
            TALLY_REPORTING_SYNC_SETTLE_S="0",
            TALLY_REPORTING_SYNC_BUDGET_S="20",
            OS_CLIENT_CONFIG_FILE=str(clouds_yaml),
        )
        with running_daemon(env) as daemon:
            wait_until_ready(daemon.base_url)
            main = daemon.proc.pid
            workers = children(main)
            assert len(workers) == 2
            assert all(b"--http-worker" in Path(f"/proc/{w}/cmdline").read_bytes() for w in workers)
            token = secret(env, "token", "create", "--role", "read_all")
            at_worker = connection_held_by(port, set(workers), [main, *workers])
            at_main = connection_held_by(port, {main}, [main, *workers])
            for _ in range(5):
                assert ask(at_worker, "GET", "/api/v1/events?limit=10", token)[0] == 200
            for _ in range(3):
                assert ask(at_main, "GET", "/api/v1/events?limit=10", token)[0] == 200
            # The cloud's scheduler runs in the main process: a worker forwards the trigger to it.
            status, answer = ask(at_worker, "POST", "/internal/sync/os-fake", INTERNAL, b"{}")
            assert status == 200, answer
            assert b'"created":2' in answer.replace(b" ", b"")
            assert ask(at_worker, "POST", "/internal/sync/os-fake", "wrong", b"{}")[0] == 401
            # The actors' checks are the main process's, answered through the worker.
            status, ready = ask(at_worker, "GET", "/readyz")
            assert status == 200 and b'"actors"' in ready and b'"clouds"' in ready
            # Every answer counted once, whichever process gave it, on either process's /metrics.
            for conn in (at_worker, at_main):
                metrics = ask(conn, "GET", "/metrics")[1].decode()
                assert http_requests(metrics, "/api/v1/events") == 8
                assert 'tally_sync_runs_total{cloud="os-fake",status="completed"} 1.0' in metrics
            at_worker.close()
            at_main.close()
            assert daemon.stop() == 0, daemon.log
        assert not any(alive(w) for w in workers)  # drained and reaped with the daemon
    assert "http workers serving count=2" in daemon.log
    # The workers drained within the grace, leaving the rest of it to the actors after them.
    assert "cancelled at end of grace" not in daemon.log
    assert "actors=store,current-resources,events-upkeep,http,http-workers,sync-scheduler:" in daemon.log


def test_a_crashed_worker_is_started_again_and_workers_end_with_the_daemon(
    tmp_path: Path, pg_url: str
) -> None:
    port = free_port()
    env = daemon_env(
        tmp_path / "state", port, TALLY_REPORTING_DB_URL=pg_url, TALLY_REPORTING_HTTP_WORKERS="2"
    )
    with running_daemon(env) as daemon:
        wait_until_ready(daemon.base_url)
        main = daemon.proc.pid
        (first,) = children(main)
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while not ((now := children(main)) and now[0] != first and alive(now[0])):
            assert time.monotonic() < deadline, "the worker was not started again"
            time.sleep(0.1)
        (second,) = now
        token = secret(env, "token", "create", "--role", "read_all")
        conn = connection_held_by(port, {second}, [main, second])
        assert ask(conn, "GET", "/api/v1/resources", token)[0] == 200
        conn.close()
        # The main process gone without a drain: the worker's lifeline (its stdin) ends, and so does it.
        os.kill(main, signal.SIGKILL)
        daemon.proc.wait(timeout=10)
        deadline = time.monotonic() + 15
        while alive(second):
            assert time.monotonic() < deadline, "the worker outlived the daemon"
            time.sleep(0.1)
        daemon.code = -9
        daemon.log = daemon.proc.communicate()[1]
    assert f"http worker exited number=1 pid={first} code=-9" in daemon.log


def test_sqlite_serves_on_one_process_and_refuses_more(tmp_path: Path) -> None:
    env = daemon_env(tmp_path / "state", free_port())
    with running_daemon(env) as daemon:
        wait_until_ready(daemon.base_url)
        assert children(daemon.proc.pid) == []
        assert daemon.stop() == 0, daemon.log
    refused = tally({**env, "TALLY_REPORTING_HTTP_WORKERS": "2"}, "run")
    assert refused.returncode == 2
    assert refused.stderr.startswith("tally: TALLY_REPORTING_HTTP_WORKERS=2: the embedded SQLite store")


def test_one_worker_is_the_main_process_alone(tmp_path: Path, pg_url: str) -> None:
    env = daemon_env(
        tmp_path / "state", free_port(), TALLY_REPORTING_DB_URL=pg_url, TALLY_REPORTING_HTTP_WORKERS="1"
    )
    with running_daemon(env) as daemon:
        wait_until_ready(daemon.base_url)
        assert children(daemon.proc.pid) == []
        assert daemon.stop() == 0, daemon.log
    assert "http-workers" not in daemon.log


@pytest.mark.anyio
async def test_a_worker_answers_503_when_the_main_process_is_gone_and_serves_the_rest_itself(
    tmp_path: Path,
) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]}
        )
        await send({"type": "http.response.body", "body": b"the worker's own"})

    to_owner = ToOwner(app, str(tmp_path / "nobody.sock"))
    transport = httpx.ASGITransport(app=to_owner)
    async with httpx.AsyncClient(transport=transport, base_url="http://tally") as client:
        assert (await client.get("/api/v1/events")).text == "the worker's own"
        for path in ("/internal/sync/os-fake", "/metrics", "/readyz", "/healthz"):
            answer = await client.post(path) if path.startswith("/internal") else await client.get(path)
            assert answer.status_code == 503, path
            assert answer.text == "the daemon's main process does not answer\n"
        assert (await client.get("/metricsx")).text == "the worker's own"
    await to_owner.client.aclose()
