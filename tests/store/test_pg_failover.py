"""A URL naming two PostgreSQL servers: the store's sessions go to the one that takes writes.

The first host is a node of the test's own, the second the machine's server (a database of the same
name on each, both migrated). ``writable_target`` gives a URL of several hosts
``target_session_attrs=read-write`` when it names none, so libpq passes over a server whose sessions
are read-only (a demoted primary, a standby) to the next one:

- while the node takes writes, the pool's sessions are on it;
- turned read-only (``default_transaction_read_only`` for the whole server, reloaded, as a demoted
  primary), a write is refused once (``StoreReadOnly``) and the pool's sessions are replaced: the next
  ones are on the second server, and writes go through again without a restart; a sync's lock is
  taken there too;
- a store opened now connects to the second server from the start;
- with ``target_session_attrs=any`` named in the URL (libpq's default) the store goes to the
  read-only node and cannot even open: the attribute is what moves it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import anyio
import psycopg
import pytest

from tally.store import StoreUnavailable, open_store
from tally.store._read_only import writable_target
from tally.testing.pg_node import PgNode

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

HEALED_S = 10.0


def test_several_hosts_default_to_read_write_and_a_url_keeps_its_own_choice() -> None:
    assert "target_session_attrs=read-write" in writable_target("postgresql://u@db-a:5432,db-b:5432/tally")
    assert writable_target("host=db-a,db-b dbname=tally").endswith("target_session_attrs=read-write")
    for kept in (
        "postgresql://u@db-a:5432/tally",
        "postgresql://u@db-a,db-b/tally?target_session_attrs=any",
        "postgresql://u@db-a,db-b/tally?target_session_attrs=primary",
    ):
        assert writable_target(kept) == kept


@pytest.fixture
def two_servers(pg_node: PgNode, pg_url: str) -> Iterator[tuple[str, int, int]]:
    """The two-host URL (the node first), the node's port and the machine's."""
    machine = urlsplit(pg_url)
    name = machine.path.lstrip("/")
    with psycopg.connect(pg_node.url(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    host = machine.hostname or "127.0.0.1"
    user = machine.username or "postgres"
    yield (
        f"postgresql://{user}@127.0.0.1:{pg_node.port},{host}:{machine.port}/{name}",
        pg_node.port,
        machine.port or 5432,
    )


def read_only_server(node: PgNode) -> None:
    with psycopg.connect(node.url(), autocommit=True) as admin:
        admin.execute("ALTER SYSTEM SET default_transaction_read_only = on")
        admin.execute("SELECT pg_reload_conf()")


async def server_port(store: object) -> int:
    async with store.seam._connection() as conn:  # type: ignore[attr-defined]
        row = await (await conn.execute("SELECT inet_server_port()")).fetchone()
    return int(row[0])


async def test_the_pool_goes_to_the_writable_server_and_follows_a_demotion(
    two_servers: tuple[str, int, int], pg_node: PgNode, pg_url: str
) -> None:
    url, node_port, machine_port = two_servers
    async with open_store(pg_url) as machine:
        await machine.migrate_up()
    async with open_store(url, max_conns=2) as store:
        await store.migrate_up()  # on the node: the first host, writable
        assert await server_port(store) == node_port
        await store.write_check()

        read_only_server(pg_node)
        began = time.monotonic()
        # The reload reaches the node's sessions a moment later: until then a write still goes through.
        while True:
            try:
                await store.write_check()
            except StoreUnavailable as exc:
                assert "read-only" in str(exc), exc
                break
            assert time.monotonic() - began < HEALED_S, "the node never refused a write"
            await anyio.sleep(0.05)
        while True:
            try:
                await store.write_check()
                break
            except StoreUnavailable:
                assert time.monotonic() - began < HEALED_S, "the writes never went to the second server"
                await anyio.sleep(0.2)
        print(f"writes go through {time.monotonic() - began:.1f} s after the demotion")
        assert await server_port(store) == machine_port
        # A sync's lock, on a connection of its own, is taken on the writable server too.
        async with store.sync_lock("os-a"):
            with psycopg.connect(pg_url) as machine_conn:
                held = machine_conn.execute(
                    "SELECT count(*) > 0 FROM pg_locks l JOIN pg_database d ON d.oid = l.database "
                    "WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()"
                ).fetchone()
            assert held == (True,)

    async with open_store(url, max_conns=1) as fresh:
        assert await server_port(fresh) == machine_port
        await fresh.write_check()

    # The node refuses the store's first write (its schema table), as it refuses every write.
    with pytest.raises(StoreUnavailable, match="read-only"):
        async with open_store(f"{url}?target_session_attrs=any", max_conns=1):
            pass
