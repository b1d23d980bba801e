"""The listing connections of back-to-back runs, kept inside a scope the caller opens.

Outside ``kept_connections()`` every run opens its listing client and closes it, and with it its
connections, at its end: a deployment's runs lie minutes apart, far beyond any server's keep-alive.
Inside one, a grant's client is kept until the scope ends, so runs that follow each other within a
second (a simulated month syncs hundreds of times) send on the connections of the run before instead
of opening about ten a run. A kept connection idle longer than ``KEEPALIVE_S`` is dropped rather than
reused, well inside the shortest keep-alive a server is likely to have (gunicorn's 2 s), so a request
never meets a connection the server is closing. A scope opened with a ``transport`` sends every kept
client's requests through it instead (a simulated month hands its fake cloud's app in-process).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass, field

import httpx

from ._keystone import Grant, listing_client

KEEPALIVE_S = 1.0


@dataclass
class _Kept:
    clients: dict[Grant, httpx.AsyncClient] = field(default_factory=dict)
    transport: httpx.AsyncBaseTransport | None = None


_KEPT: ContextVar[_Kept | None] = ContextVar("tally_openstack_kept", default=None)


@contextlib.asynccontextmanager
async def kept_connections(transport: httpx.AsyncBaseTransport | None = None) -> AsyncIterator[None]:
    """Keep each grant's listing client across the runs inside the block; close them all at its end.
    With ``transport``, the kept clients send through it."""
    kept = _Kept(transport=transport)
    token = _KEPT.set(kept)
    try:
        yield
    finally:
        _KEPT.reset(token)
        for client in kept.clients.values():
            await client.aclose()


@contextlib.asynccontextmanager
async def run_client(grant: Grant) -> AsyncIterator[httpx.AsyncClient]:
    """The listing client of a run: the grant's kept one inside ``kept_connections``, else its own."""
    kept = _KEPT.get()
    if kept is None:
        async with listing_client(grant) as client:
            yield client
        return
    if grant not in kept.clients:
        kept.clients[grant] = listing_client(grant, keepalive_s=KEEPALIVE_S, transport=kept.transport)
    yield kept.clients[grant]
