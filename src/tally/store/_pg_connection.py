"""PostgreSQL sessions: the pool's reconnect rule, a session's settings, and the ``Tx`` over a connection."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import lru_cache
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.json import set_json_loads
from psycopg_pool import AsyncConnectionPool

from ._sql_text import loads_json

# psycopg_pool retries a connection it could not make after 1 s, doubling the delay up to its
# reconnect_timeout (5 minutes by default): after a 30 s outage the next attempt came up to 30 s after
# the server was back (docs/scaling.md, "PostgreSQL HA", has the measured figures). So each attempt gives up
# after a few seconds and ``reconnect_again`` starts a new one at once: during an outage the pool
# tries at 0, 1, 3 and 5 s, over and over, and is back within about 2 s of the server.
RECONNECT_TIMEOUT_S = 5.0


async def reconnect_again(pool: AsyncConnectionPool[Any]) -> None:
    """The pool's ``reconnect_failed``: an attempt gave up, so start another (``check`` grows a pool
    below its size); otherwise the pool would wait for a request to try again."""
    if not pool.closed:
        await pool.check()


@lru_cache(maxsize=512)
def pg_sql(sql: str) -> str:
    return sql.replace("%", "%%").replace("?", "%s")


class PgTx:
    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self.conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        cursor = await self.conn.execute(pg_sql(sql), list(params))
        return int(cursor.rowcount)

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        async with self.conn.cursor() as cursor:
            await cursor.executemany(pg_sql(sql), [list(r) for r in rows])

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cursor = await self.conn.execute(pg_sql(sql), list(params))
        return [tuple(r) for r in await cursor.fetchall()]

    @asynccontextmanager
    async def stream(
        self, sql: str, params: Sequence[Any], *, size: int
    ) -> AsyncIterator[AsyncIterator[list[tuple[Any, ...]]]]:
        # A server-side cursor (DECLARE ... FETCH), closed on the way out whatever ends the reading.
        async with self.conn.cursor(name="tally_stream") as cursor:
            await cursor.execute(pg_sql(sql), list(params))
            yield _fetched(cursor, size)


async def _fetched(cursor: psycopg.AsyncServerCursor[Any], size: int) -> AsyncIterator[list[tuple[Any, ...]]]:
    while rows := await cursor.fetchmany(size):
        yield rows


def describe_url(url: str) -> str:
    """host:port/dbname of a URL, never its password."""
    try:
        info = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "(an unparsable URL)"
    return f"{info.get('host', 'localhost')}:{info.get('port', 5432)}/{info.get('dbname', '')}"


async def configure_session(conn: psycopg.AsyncConnection[Any]) -> None:
    # Projection rows carry two jsonb columns each; orjson parses them several times faster.
    set_json_loads(loads_json, conn)
    # Instants are UTC everywhere in Tally; with the session in UTC psycopg hands back datetimes already
    # in datetime.UTC, so reading a row costs no zone conversion (a named zone costs one per value).
    await conn.execute("SET TIME ZONE 'UTC'")
