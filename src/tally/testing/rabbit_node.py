"""Private RabbitMQ nodes for the suite and the benchmarks: restarted, frozen or served over TLS at will.

Each node has its own name, ports (AMQP, TLS, Erlang distribution), data directory, log directory,
plugins file and Erlang cookie (``HOME`` is the node's directory), so it shares nothing with the
machine's broker or with another engineer's node. ``rabbitmq-server`` runs in the foreground as a
child of the caller: ``freeze``/``thaw`` are SIGSTOP/SIGCONT of the broker itself, ``restart`` is a
full stop and start, which deletes non-durable exchanges and every binding on them, as a real
restart does.

A node made with a ``TlsListener`` also listens for TLS with a certificate that a throwaway CA made
here signs (``make_ca``); it asks for client certificates without requiring one, and takes the
EXTERNAL login from a client certificate's common name (PLAIN and AMQPLAIN stay on). The tests
(``tests/collector``) and ``bench.collector`` share this module so that the benchmark never imports
the tests.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

RABBIT_BIN = Path("/usr/lib/rabbitmq/bin")
START_TIMEOUT_S = 90.0
_LOOPBACK = ipaddress.IPv4Address("127.0.0.1")

Issuer = Callable[[str], tuple[Path, Path]]


class RabbitNodeUnavailable(RuntimeError):
    """``rabbitmq-server`` is not installed where this module looks for it."""


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


def _certificate(
    subject: str, key: ec.EllipticCurvePrivateKey, issuer: tuple[str, ec.EllipticCurvePrivateKey] | None
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    issuer_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer[0])]) if issuer else name
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )
    if issuer is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    else:
        # Valid for the loopback address by name and by IP, whichever the client connects to.
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(_LOOPBACK)]),
            critical=False,
        )
    return builder.sign(issuer[1] if issuer else key, hashes.SHA256())


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )


def make_ca(directory: Path, name: str) -> tuple[Path, Issuer]:
    """A CA in ``directory``: its certificate file, and a function issuing (cert, key) files for a
    common name (valid for localhost and 127.0.0.1, for one day)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_file = directory / f"{name}-ca.pem"
    ca_file.write_bytes(_certificate(name, ca_key, None).public_bytes(serialization.Encoding.PEM))

    def issue(subject: str) -> tuple[Path, Path]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _certificate(subject, key, (name, ca_key))
        cert_file, key_file = directory / f"{subject}.pem", directory / f"{subject}.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, key_file)
        return cert_file, key_file

    return ca_file, issue


@dataclass(frozen=True)
class TlsListener:
    """A node's TLS listener: its port, the CA that signed the node's certificate, and ``issue`` for
    client certificates from the same CA."""

    port: int
    ca: Path
    certfile: Path
    keyfile: Path
    issue: Issuer

    @classmethod
    def make(cls, directory: Path) -> TlsListener:
        ca, issue = make_ca(directory, "tally-test")
        certfile, keyfile = issue("localhost")
        return cls(free_port(), ca, certfile, keyfile, issue)

    def config(self) -> str:
        return (
            f"listeners.ssl.default = 127.0.0.1:{self.port}\n"
            f"ssl_options.cacertfile = {self.ca}\nssl_options.certfile = {self.certfile}\n"
            f"ssl_options.keyfile = {self.keyfile}\nssl_options.verify = verify_peer\n"
            "ssl_options.fail_if_no_peer_cert = false\nssl_cert_login_from = common_name\n"
            # RabbitMQ's defaults (oslo logs in with AMQPLAIN), plus EXTERNAL.
            "auth_mechanisms.1 = PLAIN\nauth_mechanisms.2 = AMQPLAIN\nauth_mechanisms.3 = EXTERNAL\n"
        )


@dataclass
class BrokerNode:
    """One private RabbitMQ node under ``base``; ``start()`` before use, ``stop()`` at the end."""

    base: Path
    config: str = ""
    plugins: tuple[str, ...] = ()
    tls: TlsListener | None = None
    port: int = field(default_factory=free_port)
    dist_port: int = field(default_factory=free_port)
    name: str = field(default_factory=lambda: f"tally-t-{uuid.uuid4().hex[:8]}@localhost")
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/"

    def vhost_url(self, vhost: str, scheme: str = "amqp", port: int | None = None) -> str:
        return f"{scheme}://guest:guest@127.0.0.1:{port or self.port}/{quote(vhost, safe='')}"

    def tls_url(self, vhost: str = "/", query: str = "") -> str:
        """amqps on the TLS listener with the CA as ``cafile`` (the collector's and aio-pika's
        spelling); ``query`` is appended (``&certfile=...``)."""
        if self.tls is None:
            raise ValueError(f"rabbitmq node {self.name} has no TLS listener")
        path = "" if vhost == "/" else quote(vhost, safe="")
        return f"amqps://guest:guest@127.0.0.1:{self.tls.port}/{path}?cafile={self.tls.ca}{query}"

    def _env(self) -> dict[str, str]:
        self.base.mkdir(parents=True, exist_ok=True)
        plugins = self.plugins + (("rabbitmq_auth_mechanism_ssl",) if self.tls else ())
        plugins_file = self.base / "enabled_plugins"
        plugins_file.write_text(f"[{','.join(dict.fromkeys(plugins))}].\n")
        conf = self.base / "rabbitmq.conf"
        # Loopback users (guest) may log in over TCP on this private node only.
        conf.write_text(
            f"listeners.tcp.default = 127.0.0.1:{self.port}\nloopback_users = none\n"
            f"vm_memory_high_watermark.relative = 0.4\n{self.tls.config() if self.tls else ''}{self.config}"
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
            RABBITMQ_ENABLED_PLUGINS_FILE=str(plugins_file),
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
        """Start the node and wait until its AMQP port (and TLS port, if any) accepts connections."""
        if shutil.which(str(RABBIT_BIN / "rabbitmq-server")) is None:
            raise RabbitNodeUnavailable(f"{RABBIT_BIN / 'rabbitmq-server'} is not installed")
        env = self._env()
        log = open(self.base / "server.out", "ab")  # noqa: SIM115 (the child holds it)
        self.process = subprocess.Popen(
            [str(RABBIT_BIN / "rabbitmq-server")], env=env, stdout=log, stderr=log, start_new_session=True
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        for port in (self.port, *((self.tls.port,) if self.tls else ())):
            while not _port_open(port):
                if self.process.poll() is not None:
                    raise RuntimeError(f"rabbitmq node {self.name} exited; see {self.base / 'server.out'}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"rabbitmq node {self.name} did not open port {port}")
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
        if self.process is None:
            raise RuntimeError(f"rabbitmq node {self.name} is not running")
        os.killpg(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGCONT)

    def add_vhost(self, vhost: str, user: str = "guest") -> None:
        self.ctl("add_vhost", vhost)
        self.ctl("set_permissions", "-p", vhost, user, ".*", ".*", ".*")
