"""The load generator of ``bench.reads``: C keep-alive connections, each sending its next request as
soon as the answer is in, in one or more processes (``python -m bench._reads.load PORT PATH C SECONDS
TOKEN``, which imports only what it needs: a load process starts for every run); their counts and
latencies merged.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

import orjson

from bench._reads import WARMUP_S


# -- the load generator -------------------------------------------------------------------------------
class _Connection(asyncio.Protocol):
    """One keep-alive connection: the next request goes out as soon as an answer is complete."""

    def __init__(self, request: bytes, results: _Results) -> None:
        self.request = request
        self.results = results
        self.buffer = bytearray()
        self.needed = -1
        self.status = 0
        self.sent = 0.0

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self._send()

    def _send(self) -> None:
        self.sent = time.perf_counter()
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            if self.needed < 0:
                end = self.buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                head = bytes(self.buffer[:end]).lower()
                self.status = int(head[9:12])
                at = head.index(b"content-length:") + 15
                length = int(head[at : head.index(b"\r\n", at) if b"\r\n" in head[at:] else None])
                self.needed = end + 4 + length
            if len(self.buffer) < self.needed:
                return
            del self.buffer[: self.needed]
            self.needed = -1
            self.results.record(self.status, time.perf_counter() - self.sent)
            self._send()


@dataclass
class _Results:
    measuring: bool = False
    count: int = 0
    errors: int = 0
    first_error: int = 0

    def __post_init__(self) -> None:
        self.latencies: list[float] = []

    def record(self, status: int, latency: float) -> None:
        if status != 200:
            self.errors += 1
            self.first_error = self.first_error or status
        if self.measuring:
            self.count += 1
            self.latencies.append(latency)


def auth_header(token: str) -> str:
    """``ks:<token>`` is a keystone token, sent in X-Auth-Token; any other a Tally token."""
    if token.startswith("ks:"):
        return f"x-auth-token: {token[3:]}"
    return f"authorization: Bearer {token}"


async def run_load(port: int, path: str, connections: int, seconds: float, token: str) -> dict[str, Any]:
    request = (
        f"GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n{auth_header(token)}\r\naccept: application/json\r\n\r\n"
    ).encode()
    results = _Results()
    loop = asyncio.get_running_loop()
    transports = [
        (await loop.create_connection(lambda: _Connection(request, results), "127.0.0.1", port))[0]
        for _ in range(connections)
    ]
    await asyncio.sleep(WARMUP_S)
    results.measuring = True
    started = time.perf_counter()
    await asyncio.sleep(seconds)
    results.measuring = False
    elapsed = time.perf_counter() - started
    for transport in transports:
        transport.close()
    return {
        "count": results.count,
        "seconds": elapsed,
        "errors": results.errors,
        "first_error": results.first_error,
        "latencies_us": [round(lat * 1e6) for lat in results.latencies],
    }


def client_main(port: int, path: str, connections: int, seconds: float, token: str) -> None:
    import uvloop

    result = uvloop.run(run_load(port, path, connections, seconds, token))
    # The loop may leave stdout non-blocking: a write past the pipe's 64 KiB would then be cut short.
    os.set_blocking(sys.stdout.fileno(), True)
    sys.stdout.buffer.write(orjson.dumps(result))
    sys.stdout.buffer.flush()


def load(port: int, path: str, connections: int, seconds: float, token: str, procs: int) -> dict[str, Any]:
    """Run the load in ``procs`` processes sharing ``connections``; their merged counts and latencies."""
    shares = [connections // procs + (1 if i < connections % procs else 0) for i in range(procs)]
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "bench._reads.load", str(port), path, str(n), str(seconds), token],
            stdout=subprocess.PIPE,
        )
        for n in shares
        if n
    ]
    parts = [orjson.loads(child.communicate()[0]) for child in children]
    errors = sum(p["errors"] for p in parts)
    if errors:
        first = next(p["first_error"] for p in parts if p["errors"])
        raise SystemExit(f"bench.reads: {errors} answers were not 200 (the first: {first}) on {path}")
    return {
        "count": sum(p["count"] for p in parts),
        "seconds": max(p["seconds"] for p in parts),
        "latencies": sorted(lat / 1e6 for p in parts for lat in p["latencies_us"]),
    }


if __name__ == "__main__":
    client_port, client_path, client_conns, client_seconds, client_token = sys.argv[1:]
    client_main(int(client_port), client_path, int(client_conns), float(client_seconds), client_token)
