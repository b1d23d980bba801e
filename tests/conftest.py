"""Fixtures shared by every test area: the machine's PostgreSQL and RabbitMQ.

- ``pg_url``: a fresh, empty PostgreSQL database (unique name), dropped after the test.
- ``pg_schema_url``: a fresh schema of one database shared by the run, dropped after the test.
- ``pg_session_schema``: makes a schema of that database that lasts the whole run.
- ``small_filesystem``: a 4 MiB tmpfs of the test's own, mounted under its tmp_path, to fill
  (``fill()``: a filler file takes every free byte) and free again; unmounted after the test. Without
  the right to mount (not root, no CAP_SYS_ADMIN) the test skips (fails in CI).
- ``pg_node``: a PostgreSQL cluster of the test's own (``tally.testing.pg_node``), started, to
  restart, stop and start under what the test runs; removed after it.
- ``amqp_url``: the RabbitMQ URL on a vhost this run made (``rabbitmqctl add_vhost``) and deletes at
  its end, so nothing another publisher sends on the broker reaches a test; tests still use unique
  exchange and queue names within it. ``TALLY_TEST_AMQP_URL`` names the broker (default the machine's,
  ``amqp://guest:guest@127.0.0.1:5672/``); ``rabbitmqctl`` must reach its node, and the URL's user
  gets full permissions on the run's vhost.

A service that does not answer skips the test on a developer machine, but with ``CI`` set it fails:
a CI run must never turn green by silently testing less.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import psycopg
import pytest

from tally.testing.pg_node import PgNode, PgNodeUnavailable

PG_ADMIN_URL = os.environ.get("TALLY_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
AMQP_URL = os.environ.get("TALLY_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")


def require_service(name: str, url: str) -> None:
    """Fail (under CI) or skip (elsewhere) unless ``url``'s host and port accept a connection."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port
    try:
        with socket.create_connection((host, port or 0), timeout=2):
            return
    except OSError as exc:
        message = f"{name} at {host}:{port} does not answer ({exc}); scripts/test starts it"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _database_url(name: str) -> str:
    return urlsplit(PG_ADMIN_URL)._replace(path=f"/{name}").geturl()


@contextmanager
def _fresh_database(prefix: str) -> Iterator[str]:
    require_service("PostgreSQL", PG_ADMIN_URL)
    name = f"{prefix}_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _database_url(name)
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """The event loop the daemon runs on, the one definition of it. Module-scoped, as anyio's own, so a
    module's async fixtures may be module-scoped too (the real-cloud lane's are). The actor runtime's
    tests run both asyncio and trio (tests/actors/conftest.py), and so do the collector wire's
    (``both_backends`` in tests/collector/test_wire.py)."""
    return "asyncio"


def _set_read_only(url: str, on: bool) -> None:
    """The database ``url`` names read-only for new sessions (or not); with ``on``, its sessions end,
    as a failover or a restart ends them, so that the pool's new ones are read-only."""
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    # From the maintenance database: a session of the read-only one could not turn it back.
    with psycopg.connect(parts._replace(path="/postgres").geturl(), autocommit=True) as admin:
        if on:
            admin.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                [name],
            )
        else:
            admin.execute(f'ALTER DATABASE "{name}" RESET default_transaction_read_only')


@pytest.fixture
def set_read_only() -> Callable[[str, bool], None]:
    """``set_read_only(url, on)``: the test's own database read-only for new sessions, or writable."""
    return _set_read_only


@pytest.fixture
def pg_url() -> Iterator[str]:
    """URL of a new empty database on the machine's PostgreSQL; dropped (forcibly) after the test."""
    with _fresh_database("tally_test") as url:
        yield url


@pytest.fixture
def pg_node(tmp_path: Path) -> Iterator[PgNode]:
    """A PostgreSQL node of this test's own, started (its ``url()`` reaches the superuser ``postgres``);
    stopped and removed after the test. Without ``initdb`` and ``pg_ctl`` the test skips (fails in CI)."""
    try:
        node = PgNode(tmp_path / "pg")
    except PgNodeUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    try:
        node.start()
        yield node
    finally:
        node.stop(remove=True)


class SmallFilesystem:
    """A size-limited tmpfs: a full disk the test can make (``fill``) and end (``free``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._filler = path / "filler"

    def fill(self) -> None:
        """Take every free byte with a filler file: the next write that needs a new block fails."""
        # Unbuffered, so a refused write fails here and not again in close().
        with self._filler.open("ab", buffering=0) as filler:
            for chunk in (1 << 16, 512):
                with contextlib.suppress(OSError):
                    while True:
                        filler.write(b"\0" * chunk)
        free = os.statvfs(self.path).f_bavail
        assert free == 0, f"{free} blocks still free on {self.path}"

    def free(self) -> None:
        self._filler.unlink(missing_ok=True)


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Iterator[SmallFilesystem]:
    mount_point = tmp_path / "small-fs"
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m,mode=0777", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        message = f"cannot mount a tmpfs for the full-disk test: {done.stderr.strip()}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield SmallFilesystem(mount_point)
    finally:
        subprocess.run(["umount", "--lazy", str(mount_point)], check=True)


@pytest.fixture(autouse=True)
def _logging_as_it_was() -> Iterator[None]:
    """A command run in-process sets up logging (``setup_logging``): a stderr handler on the root logger
    and levels on chatty loggers. Left in place, its handler writes to a capture stream that pytest has
    closed, and every later test that logs prints "--- Logging error ---". Undo it after each test
    (pytest's own capture handlers are subclasses, added and removed by pytest itself)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    loggers = {name: logging.getLogger(name).level for name in logging.root.manager.loggerDict}
    yield
    for handler in list(root.handlers):
        if type(handler) is logging.StreamHandler and handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)
    for name, was in loggers.items():
        logging.getLogger(name).setLevel(was)


@pytest.fixture(scope="session")
def pg_session_database() -> Iterator[str]:
    """One database for the whole run, dropped at its end; tests isolate themselves by schema."""
    with _fresh_database("tally_test_session") as url:
        yield url


def _new_schema(database_url: str, prefix: str) -> tuple[str, str]:
    """A new schema of ``database_url`` and a URL whose connections use it as search_path."""
    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    return schema, f"{database_url}?options={quote(f'-csearch_path={schema}')}"


@pytest.fixture
def pg_schema_url(pg_session_database: str) -> Iterator[str]:
    """URL of a fresh, empty schema of the run's database (its connections use it as search_path).

    A schema per test is far cheaper than a database per test, and as isolated for our tables.
    """
    schema, url = _new_schema(pg_session_database, "t")
    try:
        yield url
    finally:
        with psycopg.connect(pg_session_database, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(scope="session")
def pg_session_schema(pg_session_database: str) -> Callable[[str], str]:
    """Makes a schema that lives as long as the run (for an area that migrates once and shares it)."""
    return lambda prefix: _new_schema(pg_session_database, prefix)[1]


def rabbitmqctl(*args: str) -> str:
    """Run ``rabbitmqctl`` on the test broker's node; its stdout, or the test fails naming the command."""
    binary = shutil.which("rabbitmqctl")
    if binary is None:
        pytest.fail("rabbitmqctl is not on PATH: the RabbitMQ tests make a vhost of their own with it")
    done = subprocess.run([binary, *args], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        pytest.fail(f"rabbitmqctl {' '.join(args)} failed: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


@pytest.fixture(scope="session")
def amqp_vhost() -> Iterator[str]:
    """A vhost of this run on the test broker, the URL's user granted on it; deleted at the run's end."""
    require_service("RabbitMQ", AMQP_URL)
    name = f"tally-test-{uuid.uuid4().hex[:12]}"
    user = unquote(urlsplit(AMQP_URL).username or "guest")
    rabbitmqctl("add_vhost", name)
    try:
        rabbitmqctl("set_permissions", "-p", name, user, ".*", ".*", ".*")
        yield name
    finally:
        rabbitmqctl("delete_vhost", name)


@pytest.fixture(scope="session")
def amqp_url(amqp_vhost: str) -> str:
    """URL of the test broker on this run's own vhost (see ``amqp_vhost``)."""
    require_service("RabbitMQ", AMQP_URL)
    return urlsplit(AMQP_URL)._replace(path="/" + quote(amqp_vhost, safe="")).geturl()
