"""The shared service fixtures give a usable, isolated PostgreSQL database and a reachable RabbitMQ."""

from __future__ import annotations

import socket
import subprocess
from urllib.parse import unquote, urlsplit

import psycopg


def test_pg_url_is_a_fresh_empty_database(pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn:
        name = conn.execute("SELECT current_database()").fetchone()
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
    assert name is not None and name[0].startswith("tally_test_")
    assert tables == (0,)


def test_amqp_url_answers(amqp_url: str) -> None:
    parts = urlsplit(amqp_url)
    with socket.create_connection((parts.hostname or "", parts.port or 5672), timeout=2) as sock:
        sock.sendall(b"AMQP\x00\x00\x09\x01")
        assert sock.recv(8)  # the broker answers the protocol header with connection.start


def test_amqp_url_is_on_a_vhost_of_the_run(amqp_url: str, amqp_vhost: str) -> None:
    listed = subprocess.run(["rabbitmqctl", "-q", "list_vhosts"], capture_output=True, text=True, check=True)
    assert unquote(urlsplit(amqp_url).path[1:]) == amqp_vhost != "/"
    assert amqp_vhost in listed.stdout.split()
