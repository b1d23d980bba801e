"""The lean consumer's TLS reads, without a socket: a client and a server ``SSLObject`` over memory
BIOs, the server writing one record per write as RabbitMQ does per delivery.

``with_buffered_records`` must hand over every complete record the socket's bytes brought in, in
order, wherever a socket read cut the stream, and nothing of a record not yet complete.
"""

from __future__ import annotations

import ssl

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tally.collector._wire import with_buffered_records

trustme = pytest.importorskip("trustme")

CA = trustme.CA()
SERVER_CERT = CA.issue_cert("localhost")


class Pair:
    """A TLS client and server that talk through memory: ``carry`` moves what one wrote to the other."""

    def __init__(self) -> None:
        client_context = ssl.create_default_context()
        CA.configure_trust(client_context)
        server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        SERVER_CERT.configure_cert(server_context)
        self.client_in, self.client_out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.server_in, self.server_out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.client = client_context.wrap_bio(self.client_in, self.client_out, server_hostname="localhost")
        self.server = server_context.wrap_bio(self.server_in, self.server_out, server_side=True)
        done = {False}
        while done != {True}:
            done = {_step(self.client), _step(self.server)}
            self.server_in.write(self.client_out.read())
            self.client_in.write(self.server_out.read())
        # TLS 1.3 session tickets come after the handshake: read them off, as the first read would.
        with pytest.raises(ssl.SSLWantReadError):
            self.client.read(1)

    def first_read(self) -> bytes:
        """What anyio's TLS stream's ``receive`` returns: one record's plaintext, b"" if none is complete."""
        try:
            return self.client.read(65536)
        except ssl.SSLWantReadError:
            return b""


def _step(side: ssl.SSLObject) -> bool:
    try:
        side.do_handshake()
    except ssl.SSLWantReadError:
        return False
    return True


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=3000), min_size=1, max_size=30),
    st.lists(st.integers(min_value=1, max_value=20000), max_size=10),
)
def test_every_complete_record_is_read_in_order_wherever_the_socket_cut(
    records: list[int], cuts: list[int]
) -> None:
    pair = Pair()
    sent = b""
    for number, size in enumerate(records):
        record = bytes([number % 256]) * size
        pair.server.write(record)
        sent += record
    wire = pair.server_out.read()
    got = b""
    at = 0
    for cut in [*cuts, len(wire)]:
        chunk, at = wire[at : at + cut], at + cut
        pair.client_in.write(chunk)
        first = pair.first_read()
        if first:
            got += with_buffered_records(pair.client, first)
            # Nothing complete is left behind for the next socket read.
            assert pair.first_read() == b""
        if at >= len(wire):
            break
    assert got == sent


def test_one_socket_read_of_many_records_comes_out_as_one_chunk() -> None:
    pair = Pair()
    deliveries = [f"delivery {n} ".encode() * 50 for n in range(40)]
    for delivery in deliveries:
        pair.server.write(delivery)
    pair.client_in.write(pair.server_out.read())
    first = pair.first_read()
    assert first == deliveries[0]  # one record per read, as the TLS stream alone would give
    assert with_buffered_records(pair.client, first) == b"".join(deliveries)


def test_the_peers_close_notify_stops_the_drain_and_is_left_for_the_stream() -> None:
    pair = Pair()
    pair.server.write(b"last delivery")
    with pytest.raises(ssl.SSLWantReadError):
        pair.server.unwrap()  # sends close_notify, then waits for the client's
    pair.client_in.write(pair.server_out.read())
    first = pair.first_read()
    assert with_buffered_records(pair.client, first) == b"last delivery"
    assert pair.client.read(65536) == b""  # the stream's next receive: its end
