"""Clusters and TLS on nodes this module starts: failover across the URL's members, amqps with the
CA the test makes, a client certificate with EXTERNAL login, and the refusals named at start.

Node ``a`` is plain; node ``b`` also has a TLS listener whose certificate a CA made here signs,
asks for client certificates and takes the EXTERNAL login from their common name. The two are not
one RabbitMQ cluster: failover needs only that the collector moves to the next member, declares
and binds there (a real cluster's members share the queue; these share nothing, which makes the
move visible).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aio_pika
import anyio
import pytest
from broker_nodes import start_nodes
from collector_support import MemorySink, collecting, oslo_inner, oslo_message, settings, v2_body, wait_for

from tally.collector import Collector, CollectorError
from tally.testing.rabbit_node import BrokerNode, TlsListener, free_port, make_ca

pytestmark = [pytest.mark.anyio, pytest.mark.rabbitmq]


class Cluster:
    def __init__(self, base: Path) -> None:
        tls = TlsListener.make(base / "pki")
        self.client_cert, self.client_key = tls.issue("guest")  # EXTERNAL logs in as the common name
        self.other_ca, _ = make_ca(base / "pki-other", "somebody-else")
        self.a = BrokerNode(base / "a")
        self.b = BrokerNode(base / "b", tls=tls)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    nodes = Cluster(tmp_path_factory.mktemp("cluster"))
    start_nodes(nodes.a, nodes.b)
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
    url = cluster.b.tls_url(
        query=f"&certfile={cluster.client_cert}&keyfile={cluster.client_key}&login_method={login}"
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
    assert cluster.b.tls is not None
    url = cluster.b.tls_url().replace(str(cluster.b.tls.ca), str(cluster.other_ca))
    conf = settings(tmp_path, url, "t-wrong-ca", ["nova"])
    with pytest.raises(BaseException) as caught:
        await Collector(conf, sink=MemorySink()).serve()
    error: BaseException = caught.value
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    assert isinstance(error, CollectorError)
    assert "TLS with 127.0.0.1" in str(error) and "CERTIFICATE_VERIFY_FAILED" in str(error)
