"""A private PostgreSQL node for the suite and the benchmarks: restarted, stopped and started at will.

The node is a cluster of its own (``initdb``) on a port of its own, listening on 127.0.0.1 with trust
authentication, its socket in its data directory, so it shares nothing with the machine's server or
another engineer's node. ``restart`` is ``pg_ctl restart -m fast`` (every session ended, a shutdown
checkpoint, a new postmaster: what a failover looks like to a client that reconnects to the same
address); ``stop`` and ``start`` leave a gap between them.

PostgreSQL refuses to run as root: run as root (a container), the node runs its programs as the
``postgres`` user (``runuser``) and keeps its data in a directory of its own under ``$TMPDIR``, owned
by that user (a pytest ``tmp_path`` lives under a directory only root may enter), removed by
``stop(remove=True)``; its server log is copied into the directory the caller gave.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

START_TIMEOUT_S = 60


class PgNodeUnavailable(RuntimeError):
    """``initdb`` and ``pg_ctl`` are not installed, or (as root) there is no ``postgres`` user."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if found:
        return Path(found[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    if pg_ctl is None:
        raise PgNodeUnavailable("pg_ctl is not installed (/usr/lib/postgresql/*/bin, PATH)")
    return Path(pg_ctl).parent


class PgNode:
    """One private PostgreSQL cluster; ``url(db)`` reaches it as the superuser ``postgres``."""

    def __init__(self, directory: Path, *, port: int | None = None) -> None:
        self.directory = directory
        self.port = port or free_port()
        self.bin = _bin_dir()
        self._as: list[str] = []
        self._private: Path | None = None
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                raise PgNodeUnavailable("running as root and no postgres user to run PostgreSQL as") from None
            self._private = Path(tempfile.mkdtemp(prefix="tally-pg-node-"))
            os.chown(self._private, owner.pw_uid, owner.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
            self.data = self._private / "data"
        else:
            self.data = directory / "data"
        self.log = self.data.parent / "server.log"
        self._initialised = False

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def _run(self, program: str, *args: str, timeout: float = START_TIMEOUT_S) -> str:
        done = subprocess.run(
            [*self._as, str(self.bin / program), *args], capture_output=True, text=True, timeout=timeout
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{program} {' '.join(args)} failed: {done.stderr.strip() or done.stdout.strip()}"
            )
        return done.stdout

    def _pg_ctl(self, *args: str) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.data} "
            "-c fsync=off -c full_page_writes=off"
        )
        where = ["-D", str(self.data), "-l", str(self.log), "-w", "-t", str(START_TIMEOUT_S)]
        self._run("pg_ctl", *where, "-o", options, *args)

    def start(self) -> None:
        """``initdb`` the first time, then start the server and wait until it accepts connections."""
        if not self._initialised:
            self.directory.mkdir(parents=True, exist_ok=True)
            options = ["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"]
            self._run("initdb", "-D", str(self.data), *options)
            self._initialised = True
        self._pg_ctl("start")

    def stop(self, mode: str = "fast", *, remove: bool = False) -> None:
        """Stop the server (``-m fast``: sessions ended, a clean checkpoint); ``remove`` also deletes
        the cluster, once its log is copied into the caller's directory."""
        if self._initialised and (self.data / "postmaster.pid").exists():
            self._pg_ctl("stop", "-m", mode)
        if remove:
            if self.log.exists() and self.log.parent != self.directory:
                shutil.copy(self.log, self.directory / "server.log")
            shutil.rmtree(self._private or self.data, ignore_errors=True)

    def restart(self, mode: str = "fast") -> None:
        self._pg_ctl("restart", "-m", mode)

    def wait_accepting(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            done = subprocess.run(
                [str(self.bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)], capture_output=True
            )
            if done.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the PostgreSQL node on port {self.port} does not accept connections")
            time.sleep(0.1)
