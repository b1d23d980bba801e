"""RabbitMQ nodes a test starts for itself: restarted, frozen, failed over or served over TLS at will.

Each node has its own name, ports (AMQP, TLS, Erlang distribution), data directory, log directory,
plugins file and Erlang cookie (``HOME`` is the node's directory), so it shares nothing with the
machine's broker or with another engineer's node. ``rabbitmq-server`` runs in the foreground as a
child of the test: ``freeze``/``thaw`` are SIGSTOP/SIGCONT of the broker itself, ``restart`` is a
full stop and start, which deletes non-durable exchanges and every binding on them, as a real
restart does.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pytest

RABBIT_BIN = Path("/usr/lib/rabbitmq/bin")
START_TIMEOUT_S = 90.0


def free_port() -> int:
    """A TCP port nothing listens on now (the kernel's choice in the ephemeral range)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass
class BrokerNode:
    """One private RabbitMQ node under ``base``; ``start()`` before use, ``stop()`` at the end."""

    base: Path
    config: str = ""
    plugins: tuple[str, ...] = ()
    port: int = field(default_factory=free_port)
    dist_port: int = field(default_factory=free_port)
    name: str = field(default_factory=lambda: f"tally-t-{uuid.uuid4().hex[:8]}@localhost")
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/"

    def vhost_url(self, vhost: str, scheme: str = "amqp", port: int | None = None) -> str:
        return f"{scheme}://guest:guest@127.0.0.1:{port or self.port}/{quote(vhost, safe='')}"

    def _env(self) -> dict[str, str]:
        self.base.mkdir(parents=True, exist_ok=True)
        plugins = self.base / "enabled_plugins"
        plugins.write_text(f"[{','.join(self.plugins)}].\n")
        conf = self.base / "rabbitmq.conf"
        # Loopback users (guest) may log in over TCP on this private node only.
        conf.write_text(
            f"listeners.tcp.default = 127.0.0.1:{self.port}\nloopback_users = none\n"
            f"vm_memory_high_watermark.relative = 0.4\n{self.config}"
        )
        env = dict(os.environ)
        env.update(
            HOME=str(self.base),
            RABBITMQ_NODENAME=self.name,
            RABBITMQ_NODE_PORT=str(self.port),
            RABBITMQ_DIST_PORT=str(self.dist_port),
            RABBITMQ_MNESIA_BASE=str(self.base / "mnesia"),
            RABBITMQ_LOG_BASE=str(self.base / "log"),
            RABBITMQ_PID_FILE=str(self.base / "node.pid"),
            RABBITMQ_ENABLED_PLUGINS_FILE=str(plugins),
            RABBITMQ_CONFIG_FILE=str(conf),
            RABBITMQ_CONF_ENV_FILE=str(self.base / "rabbitmq-env.conf"),
            RABBITMQ_ADVANCED_CONFIG_FILE=str(self.base / "advanced.config"),
        )
        return env

    def ctl(self, *args: str) -> str:
        done = subprocess.run(
            [str(RABBIT_BIN / "rabbitmqctl"), "-n", self.name, *args],
            env=self._env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"rabbitmqctl {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
        return done.stdout

    def start(self) -> None:
        if shutil.which(str(RABBIT_BIN / "rabbitmq-server")) is None:
            pytest.skip("rabbitmq-server is not installed")
        env = self._env()
        log = open(self.base / "server.out", "ab")  # noqa: SIM115 (the child holds it)
        self.process = subprocess.Popen(
            [str(RABBIT_BIN / "rabbitmq-server")], env=env, stdout=log, stderr=log, start_new_session=True
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _port_open(self.port):
            if self.process.poll() is not None:
                raise RuntimeError(f"rabbitmq node {self.name} exited; see {self.base / 'server.out'}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"rabbitmq node {self.name} did not open port {self.port}")
            time.sleep(0.1)

    def stop(self) -> None:
        """A full stop (SIGTERM: the node shuts down cleanly); waits for it."""
        if self.process is None:
            return
        self.thaw()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def freeze(self) -> None:
        """SIGSTOP to the node's whole process group: the script and the Erlang VM it runs."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGCONT)

    def add_vhost(self, vhost: str, user: str = "guest") -> None:
        self.ctl("add_vhost", vhost)
        self.ctl("set_permissions", "-p", vhost, user, ".*", ".*", ".*")
