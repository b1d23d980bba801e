"""Clusters and TLS on nodes this module starts: failover across the URL's members, amqps with the
CA the test makes, a client certificate with EXTERNAL login, and the refusals named at start.

Node ``a`` is plain; node ``b`` also has a TLS listener whose certificate a CA made here signs,
asks for client certificates and takes the EXTERNAL login from their common name. The two are not
one RabbitMQ cluster: failover needs only that the collector moves to the next member, declares
and binds there (a real cluster's members share the queue; these share nothing, which makes the
move visible).
"""

from __future__ import annotations

import datetime
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aio_pika
import anyio
import pytest
from broker_nodes import BrokerNode, free_port
from collector_support import MemorySink, collecting, oslo_inner, oslo_message, settings, v2_body, wait_for
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tally.collector import Collector, CollectorError

pytestmark = [pytest.mark.anyio, pytest.mark.rabbitmq]


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )


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
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(_LOOPBACK)]),
            critical=False,
        )
    return builder.sign(issuer[1] if issuer else key, hashes.SHA256())


_LOOPBACK = __import__("ipaddress").IPv4Address("127.0.0.1")


def make_ca(directory: Path, name: str) -> tuple[Path, Callable[[str], tuple[Path, Path]]]:
    """A CA in ``directory``: its certificate file, and a function issuing (cert, key) files."""
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


class Cluster:
    def __init__(self, base: Path) -> None:
        self.tls_port = free_port()
        self.ca, issue = make_ca(base / "pki", "tally-test")
        server_cert, server_key = issue("localhost")
        self.client_cert, self.client_key = issue("guest")  # EXTERNAL logs in as the common name
        self.other_ca, _ = make_ca(base / "pki-other", "somebody-else")
        self.a = BrokerNode(base / "a")
        self.b = BrokerNode(
            base / "b",
            plugins=("rabbitmq_auth_mechanism_ssl",),
            config=(
                f"listeners.ssl.default = 127.0.0.1:{self.tls_port}\n"
                f"ssl_options.cacertfile = {self.ca}\nssl_options.certfile = {server_cert}\n"
                f"ssl_options.keyfile = {server_key}\nssl_options.verify = verify_peer\n"
                "ssl_options.fail_if_no_peer_cert = false\nssl_cert_login_from = common_name\n"
                "auth_mechanisms.1 = PLAIN\nauth_mechanisms.2 = EXTERNAL\n"
            ),
        )

    def tls_url(self, query: str) -> str:
        return f"amqps://guest:guest@127.0.0.1:{self.tls_port}/?cafile={self.ca}{query}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    nodes = Cluster(tmp_path_factory.mktemp("cluster"))
    # Started side by side: each takes several seconds of mostly waiting.
    starter = threading.Thread(target=nodes.a.start)
    starter.start()
    try:
        nodes.b.start()
    finally:
        starter.join()
    try:
        yield nodes
    finally:
        nodes.a.stop()
        nodes.b.stop()


async def _publish(url: str, exchange: str, ids: list[str]) -> None:
    connection = await aio_pika.connect(url)
    async with connection:
        channel = await connection.channel(publisher_confirms=True)
        target = await channel.declare_exchange(exchange, aio_pika.ExchangeType.TOPIC, durable=False)
        for resource in ids:
            body = v2_body(
                oslo_inner("compute.instance.create.end", {"instance_id": resource, "tenant_id": "t"})
            )
            await target.publish(oslo_message(body), routing_key="notifications.info")


def _ids(sink: MemorySink) -> set[str]:
    return {event["resource_id"] for event in sink.events.values()}


async def test_fails_over_to_the_next_member_and_binds_there(cluster: Cluster, tmp_path: Path) -> None:
    dead = free_port()
    exchange = f"nova-{uuid.uuid4().hex[:6]}"
    url = (
        f"rabbit://guest:guest@127.0.0.1:{dead},guest:guest@127.0.0.1:{cluster.a.port},"
        f"guest:guest@127.0.0.1:{cluster.b.port}/?connect_timeout=1"
    )
    async with collecting(tmp_path, url, exchange) as (sink, collector):
        # The first member refuses connections: the collector started on the second.
        await _publish(cluster.a.url, exchange, ["on-a"])
        await wait_for(lambda: _ids(sink) == {"on-a"}, within=15)
        await anyio.to_thread.run_sync(cluster.a.stop)
        try:
            await wait_for(lambda: collector.broker_problem() is None and _is_on(collector, cluster.b), 15)
            await _publish(cluster.b.url, exchange, ["on-b"])
            await wait_for(lambda: _ids(sink) == {"on-a", "on-b"}, within=15)
        finally:
            await anyio.to_thread.run_sync(cluster.a.start)


def _is_on(collector: Collector, node: BrokerNode) -> bool:
    source: Any = collector._source
    return (
        source is not None
        and source._connection is not None
        and source._connection.where.endswith(f":{node.port}")
    )


@pytest.mark.parametrize("login", ["PLAIN", "EXTERNAL"])
async def test_amqps_with_the_ca_and_a_client_certificate(
    cluster: Cluster, tmp_path: Path, login: str
) -> None:
    exchange = f"nova-{uuid.uuid4().hex[:6]}"
    url = cluster.tls_url(
        f"&certfile={cluster.client_cert}&keyfile={cluster.client_key}&login_method={login}"
    )
    if login == "EXTERNAL":
        url = url.replace("guest:guest@", "")  # no password: the certificate is the login
    async with collecting(tmp_path, url, exchange) as (sink, collector):
        assert collector.broker_problem() is None
        await _publish(cluster.b.url, exchange, ["over-tls"])
        await wait_for(lambda: _ids(sink) == {"over-tls"}, within=15)


async def test_a_broker_certificate_another_ca_signed_is_refused_at_start(
    cluster: Cluster, tmp_path: Path
) -> None:
    url = cluster.tls_url("").replace(str(cluster.ca), str(cluster.other_ca))
    conf = settings(tmp_path, url, "t-wrong-ca", ["nova"])
    with pytest.raises(BaseException) as caught:
        await Collector(conf, sink=MemorySink()).serve()
    error: BaseException = caught.value
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    assert isinstance(error, CollectorError)
    assert "TLS with 127.0.0.1" in str(error) and "CERTIFICATE_VERIFY_FAILED" in str(error)
