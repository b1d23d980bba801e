"""``tally run`` at start: a store that is down is waited for (probes answered meanwhile), a store that
refuses, an unknown URL scheme and a bound that runs out are one line and exit 2; systemd hears
EXTEND_TIMEOUT_USEC while migrations run; lines reach the journal at their own priority."""

from __future__ import annotations

import logging
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import pytest
from daemon_support import daemon_env, free_port, running_daemon, wait_until_ready
from hypothesis import given
from hypothesis import strategies as st

from tally.config._logging import JournalPriorityFormatter, priority_of, writes_to_journal
from tally.daemon._startup import backoff_delays
from tally.store._probe import classify_connect_error


def tally_run(env: dict[str, str], timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tally", "run"],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def test_an_unknown_store_scheme_is_one_line_and_exit_2(tmp_path: Path) -> None:
    env = daemon_env(tmp_path / "state", free_port(), TALLY_REPORTING_DB_URL="mysql://tally@db/tally")
    done = tally_run(env)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "tally: TALLY_REPORTING_DB_URL: store URL scheme 'mysql' is not supported "
        "(use sqlite:/// or postgresql://)"
    ]


@pytest.mark.postgres
def test_a_missing_postgresql_role_is_one_line_and_exit_2_at_once(tmp_path: Path, pg_url: str) -> None:
    url = pg_url.replace("postgres@", "tally_no_such_role@", 1)
    env = daemon_env(tmp_path / "state", free_port(), TALLY_REPORTING_DB_URL=url)
    began = time.monotonic()
    done = tally_run(env)
    assert done.returncode == 2
    assert time.monotonic() - began < 10  # not the pool's 15 s timeout
    [line] = [line for line in done.stderr.splitlines() if line.startswith("tally: ")]
    assert line.startswith("tally: TALLY_REPORTING_DB_URL: PostgreSQL at 127.0.0.1:5432/")
    assert 'role "tally_no_such_role" does not exist' in line
    assert "Traceback" not in done.stderr


def test_a_store_away_past_the_bound_is_exit_2_naming_the_bound(tmp_path: Path) -> None:
    env = daemon_env(
        tmp_path / "state",
        free_port(),
        TALLY_REPORTING_DB_URL=f"postgresql://postgres@127.0.0.1:{free_port()}/tally",
        TALLY_REPORTING_DB_START_TIMEOUT_S="3",
    )
    began = time.monotonic()
    done = tally_run(env)
    took = time.monotonic() - began
    assert done.returncode == 2, done.stderr
    assert 3 <= took < 20
    [line] = [line for line in done.stderr.splitlines() if line.startswith("tally: ")]
    assert "did not answer within TALLY_REPORTING_DB_START_TIMEOUT_S=3" in line
    assert "Connection refused" in line
    assert "store not answering attempt=1" in done.stderr


@contextmanager
def late_proxy(listen_port: int, target: tuple[str, int]) -> Iterator[threading.Event]:
    """A TCP forwarder to ``target`` on ``listen_port`` that listens only once the event is set."""
    opened, stop = threading.Event(), threading.Event()

    def pump(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                with suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def serve() -> None:
        opened.wait()
        with socket.socket() as server:
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", listen_port))
            server.listen()
            server.settimeout(0.2)
            while not stop.is_set():
                try:
                    client, _ = server.accept()
                except TimeoutError:
                    continue
                upstream = socket.create_connection(target)
                for a, b in ((client, upstream), (upstream, client)):
                    threading.Thread(target=pump, args=(a, b), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield opened
    finally:
        stop.set()
        opened.set()
        thread.join(timeout=5)


@pytest.mark.postgres
def test_a_store_down_at_start_is_waited_for_with_probes_answered(tmp_path: Path, pg_url: str) -> None:
    proxy_port = free_port()
    url = pg_url.replace("127.0.0.1:5432", f"127.0.0.1:{proxy_port}", 1)
    env = daemon_env(tmp_path / "state", free_port(), TALLY_REPORTING_DB_URL=url)
    with late_proxy(proxy_port, ("127.0.0.1", 5432)) as store_up, running_daemon(env) as daemon:
        readyz = httpx.get(f"{daemon.base_url}/readyz")
        assert readyz.status_code == 503
        detail = readyz.json()["checks"]["store"]["detail"]
        assert detail.startswith("waiting for the store: PostgreSQL at 127.0.0.1:")
        assert "TALLY_REPORTING_DB_START_TIMEOUT_S=300" in detail
        assert httpx.get(f"{daemon.base_url}/healthz").status_code == 200
        store_up.set()
        # The probes' socket is handed to the real front end: no request in between is refused.
        deadline = time.monotonic() + 60
        while httpx.get(f"{daemon.base_url}/readyz").status_code != 200:
            assert httpx.get(f"{daemon.base_url}/healthz").status_code == 200
            assert time.monotonic() < deadline, "never ready after the store came up"
            time.sleep(0.05)
        assert wait_until_ready(daemon.base_url)["store"]["ok"] is True
        assert daemon.stop() == 0, daemon.log
    assert "store not answering attempt=1" in daemon.log
    assert "store answers after attempts=" in daemon.log


def test_systemd_hears_extend_timeout_while_migrations_run(tmp_path: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
        notify.bind(str(tmp_path / "notify.sock"))
        notify.settimeout(30)
        env = daemon_env(tmp_path / "state", free_port(), NOTIFY_SOCKET=str(tmp_path / "notify.sock"))
        with running_daemon(env) as daemon:
            seen: list[str] = []
            while "READY=1" not in seen:
                seen.extend(notify.recv(4096).decode().split("\n"))
            assert daemon.stop() == 0, daemon.log
    assert "STATUS=applying migrations" in seen
    extend = [m for m in seen if m.startswith("EXTEND_TIMEOUT_USEC=")]
    assert extend and int(extend[0].split("=")[1]) >= 10_000_000
    assert seen.index(extend[0]) < seen.index("READY=1")


def test_lines_reach_the_journal_at_their_priority(tmp_path: Path) -> None:
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    stderr_path = tmp_path / "stderr"
    with blocker, stderr_path.open("w") as stderr:
        status = Path(stderr_path).stat()
        env = daemon_env(
            tmp_path / "state",
            blocker.getsockname()[1],
            JOURNAL_STREAM=f"{status.st_dev}:{status.st_ino}",
            TALLY_NO_SUCH_SETTING="1",
        )
        subprocess.run([sys.executable, "-m", "tally", "run"], env=env, stderr=stderr, timeout=60)
    lines = stderr_path.read_text().splitlines()
    assert any(line.startswith("<4>") and "unknown setting ignored" in line for line in lines), lines


def test_the_priority_prefix_is_on_every_line_of_a_record() -> None:
    formatter = JournalPriorityFormatter(logging.Formatter("%(levelname)s %(message)s"))
    record = logging.LogRecord("t", logging.ERROR, __file__, 1, "one\ntwo", None, None)
    assert formatter.format(record) == "<3>ERROR one\n<3>two"
    assert [priority_of(level) for level in (10, 20, 25, 30, 40, 50)] == [7, 6, 6, 4, 3, 2]


def test_only_the_stream_journal_stream_names_is_the_journal(tmp_path: Path) -> None:
    with (tmp_path / "a").open("w") as a, (tmp_path / "b").open("w") as b:
        status = (tmp_path / "a").stat()
        named = {"JOURNAL_STREAM": f"{status.st_dev}:{status.st_ino}"}
        assert writes_to_journal(a, named)
        assert not writes_to_journal(b, named)
        assert not writes_to_journal(a, {})
        assert not writes_to_journal(a, {"JOURNAL_STREAM": "garbage"})


@given(st.integers(min_value=0, max_value=2**32), st.integers(min_value=1, max_value=40))
def test_backoff_is_jittered_and_bounded(seed: int, attempts: int) -> None:
    delays = backoff_delays(random.Random(seed), first_s=1.0, max_s=30.0)
    taken = [next(delays) for _ in range(attempts)]
    for n, delay in enumerate(taken):
        assert 0 <= delay <= min(30.0, 2.0**n)


def test_backoff_spreads_replicas_started_together() -> None:
    firsts = {round(next(backoff_delays(random.Random(seed))), 6) for seed in range(20)}
    assert len(firsts) == 20


@pytest.mark.parametrize(
    ("message", "permanent"),
    [
        ('connection to server at "h", port 5432 failed: FATAL:  role "x" does not exist', True),
        ('connection to server at "h", port 5432 failed: FATAL:  database "x" does not exist', True),
        ("connection to server failed: FATAL:  password authentication failed for user", True),
        ("connection to server failed: FATAL:  the database system is starting up", False),
        ("connection to server failed: FATAL:  sorry, too many clients already", False),
        ("connection to server at 127.0.0.1, port 1 failed: Connection refused", False),
        ("failed to resolve host 'db': [Errno -2] Name or service not known", False),
    ],
)
def test_refusals_are_told_apart_from_a_server_not_up_yet(message: str, permanent: bool) -> None:
    assert classify_connect_error(message) is permanent
