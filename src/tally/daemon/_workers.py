"""The HTTP workers of ``tally run``: more processes serving the Reporting API on the daemon's socket.

One Python process answers on one core; ``TALLY_REPORTING_HTTP_WORKERS`` = N makes the daemon serve
on N processes: the main process (the actor tree, serving as before) and N - 1 workers
(``_worker``), each accepting from the main process's listening socket (an inherited descriptor),
one connection per wake-up (``tally.http.serve_quart``'s ``shared``): a new connection goes to
whichever process is back waiting first, which a process busy answering is not. With sockets of their
own on the port (SO_REUSEPORT) the kernel hashes each connection to one of them whatever that
process's load, and a connection can never go elsewhere. Neither evens out a handful of keep-alive
connections opened at once (``bench.reads`` prints the split): the requests on the process holding
more of them wait the longer. Everything with one owner stays in the main process: the schedulers, the
period closers, the collector and its sender, the partitions' upkeep, the gauges. The default is
``_sizing.default_http_workers``; on SQLite it is 1 and more is refused (``_preflight``).

This module owns the ``http-workers`` actor (after ``http`` in the tree, so it stops first): it
serves the main process's app on an owner socket (a unix socket in a private directory) for what
the workers forward, starts the workers, and is started once each said it serves. A worker that
exits while the daemon is not stopping fails the actor: the supervisor restarts it (every worker is
drained and started again) within its restart intensity, and past it the daemon exits 1. On stop
each worker gets SIGTERM and the graceful timeout, then SIGKILL.

The workers' counters and histograms (HTTP answers, ingest, pool waits) are kept in files of a
directory of their own (prometheus_client's multiprocess mode, named to the workers only) and the
main process's ``/metrics`` adds them to its own (``WorkersMerged``): one scrape of any process
counts every answer once. A restarted worker's files stay, so the sums only grow.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

import anyio
import orjson
from anyio.abc import Process
from prometheus_client import REGISTRY
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector
from pydantic import SecretStr
from quart import Quart

from tally.actors import ActorContext, ChildSpec
from tally.config import Settings
from tally.http import serve_quart

from ._sizing import http_workers

log = logging.getLogger(__name__)

EXIT_WINDOW_S = 2.0  # a worker stopped by the same SIGTERM as the daemon: the daemon's stop comes within it


class WorkersPlace:
    """The private directory of the owner socket and the workers' metrics files, made when the workers
    first start and removed when the daemon stops them."""

    def __init__(self) -> None:
        self.root: Path | None = None

    def make(self) -> Path:
        if self.root is None:
            # Short and private (0700): a unix socket's path is limited to 107 bytes, and the owner
            # socket answers every route of the API.
            self.root = Path(tempfile.mkdtemp(prefix="tally-http-"))
            (self.root / "metrics").mkdir()
        return self.root

    def metrics_files(self) -> list[str]:
        return [] if self.root is None else [str(p) for p in (self.root / "metrics").glob("*.db")]

    def remove(self) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None


class WorkersMerged:
    """A ``Collector``: the main process's registry, with the workers' counters and histograms added
    to the samples of the same name and labels. The workers' gauges are left out: every gauge is set
    by an owner in the main process (a worker's would only say 0)."""

    def __init__(self, place: WorkersPlace, own: Collector = REGISTRY) -> None:
        self.place = place
        self.own = own

    def collect(self) -> Iterable[Metric]:
        files = self.place.metrics_files()
        theirs = {
            m.name: m
            for m in MultiProcessCollector.merge(files, accumulate=True)  # type: ignore[no-untyped-call]
            if m.type in {"counter", "histogram"}
        }
        for family in self.own.collect():
            extra = theirs.pop(family.name, None)
            yield family if extra is None or extra.type != family.type else _summed(family, extra)
        yield from theirs.values()


def _summed(mine: Metric, theirs: Metric) -> Metric:
    total: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    labels_of: dict[tuple[str, frozenset[tuple[str, str]]], dict[str, str]] = {}
    for sample in (*mine.samples, *theirs.samples):
        key = (sample.name, frozenset(sample.labels.items()))
        total[key] = total.get(key, 0.0) + sample.value
        labels_of.setdefault(key, sample.labels)  # the main process's order of the labels, when it has them
    merged = Metric(mine.name, mine.documentation, mine.type, mine.unit)
    for key, value in total.items():
        merged.add_sample(key[0], labels_of[key], value)
    return merged


def handed_settings(settings: Settings) -> dict[str, object]:
    """``settings`` as JSON values a worker builds the same ``Settings`` from, secrets revealed."""
    fields = {}
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        fields[name] = value.get_secret_value() if isinstance(value, SecretStr) else value
    return orjson.loads(orjson.dumps(fields, default=str))  # type: ignore[no-any-return]


def http_workers_child(
    settings: Settings,
    make_app: Callable[[], Quart],
    listening: socket.socket,
    place: WorkersPlace,
) -> ChildSpec:
    """The ``http-workers`` actor: ``http_workers(settings) - 1`` workers on ``listening``."""
    count = http_workers(settings) - 1
    grace_s = min(5.0, settings.shutdown_grace_s)

    async def run(ctx: ActorContext) -> None:
        root = place.make()
        owner = _owner_socket(root / "owner.sock")
        procs: list[Process] = []
        try:
            async with anyio.create_task_group() as tg:
                serving = partial(serve_quart, make_app(), "owner", 0, graceful_timeout_s=grace_s, sock=owner)
                await tg.start(serving)
                for number in range(1, count + 1):
                    procs.append(await _start_worker(settings, listening, root, number))
                log.info("http workers serving count=%d pids=%s", count, ",".join(str(p.pid) for p in procs))
                ctx.started()
                for number, proc in enumerate(procs, 1):
                    tg.start_soon(_watch, ctx, proc, number)
                await ctx.wait_stopping()
                await _drain(procs, grace_s)
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await _drain(procs, grace_s)
            owner.close()
            if ctx.stopping:
                place.remove()

    return ChildSpec("http-workers", run)


def _owner_socket(path: Path) -> socket.socket:
    path.unlink(missing_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


async def _start_worker(settings: Settings, listening: socket.socket, root: Path, number: int) -> Process:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(root / "metrics")}
    proc = await anyio.open_process(
        [sys.executable, "-m", "tally", "run", "--http-worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=None,
        env=env,
        pass_fds=[listening.fileno()],
    )
    assert proc.stdin is not None and proc.stdout is not None
    handed = {
        "settings": handed_settings(settings),
        "owner": str(root / "owner.sock"),
        "listening": listening.fileno(),  # the same number in the worker (pass_fds)
    }
    await proc.stdin.send(orjson.dumps(handed) + b"\n")
    said = b""
    with anyio.move_on_after(60):
        async for chunk in proc.stdout:
            said += chunk
            if b"\n" in said:
                break
    if said.strip() != b"ready":
        proc.kill()
        await proc.wait()
        raise RuntimeError(f"http worker {number} did not start (exit code {proc.returncode})")
    return proc


async def _watch(ctx: ActorContext, proc: Process, number: int) -> None:
    code = await proc.wait()
    if ctx.stopping:
        return
    # Under systemd's KillMode=control-group every process hears the same SIGTERM: the daemon's stop
    # then follows at once, and the worker's drain is no crash.
    with anyio.move_on_after(EXIT_WINDOW_S):
        await ctx.wait_stopping()
        return
    log.error("http worker exited number=%d pid=%d code=%s", number, proc.pid, code)
    raise RuntimeError(f"http worker {number} (pid {proc.pid}) exited with code {code}")


async def _drain(procs: list[Process], grace_s: float) -> None:
    """SIGTERM to every worker still running, SIGKILL to any still running after the grace."""
    running = [p for p in procs if p.returncode is None]
    for proc in running:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        if proc.stdin is not None:
            await proc.stdin.aclose()  # the lifeline too: a worker that missed the signal stops on it
    with anyio.move_on_after(grace_s + 2.0):
        for proc in running:
            await proc.wait()
    for proc in procs:
        if proc.returncode is None:
            log.warning("http worker did not drain in time, killed pid=%d", proc.pid)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await proc.aclose()
    procs.clear()
