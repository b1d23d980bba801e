"""A TCP link of the test's own between the collector and the broker, that can drop every packet.

The machine has no nft or iptables to drop packets on loopback, and the broker is shared, so the
link is a forwarder: while ``dropped``, established connections carry nothing either way (as a link
whose packets are dropped: no FIN, no RST; the endpoints give up on missing heartbeats) and new
connections time out (the port listens with a full accept queue, so the kernel drops each SYN, as a
lost SYN does). ``restore()`` ends the connections of before (both endpoints had given them up) and
forwards again.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading

POLL_S = 0.05


class LossyLink:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self._target = (target_host, target_port)
        self._dropping = threading.Event()
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._filler: socket.socket | None = None
        self._listener = self._listen(backlog=64)
        self.port = int(self._listener.getsockname()[1])
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def _listen(self, backlog: int) -> socket.socket:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(backlog)
        return listener

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            if self._dropping.is_set():
                self._closed.wait(POLL_S)
                continue
            try:
                ready, _, _ = select.select([self._listener], [], [], POLL_S)
                if not ready or self._dropping.is_set():
                    continue
                client, _ = self._listener.accept()
            except (OSError, ValueError):
                return  # closed
            try:
                upstream = socket.create_connection(self._target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._pairs.append((client, upstream))
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        while not self._closed.is_set():
            if self._dropping.is_set():
                self._closed.wait(POLL_S)  # nothing read, nothing sent: the bytes wait, unseen
                continue
            try:
                ready, _, _ = select.select([src], [], [], POLL_S)
                if not ready:
                    continue
                data = src.recv(65536)
                if not data:
                    break
                if self._dropping.is_set():
                    continue  # read as the drop began: lost, as its packets would be
                dst.sendall(data)
            except (OSError, ValueError):
                break
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.close()

    def drop(self) -> None:
        """From now on nothing passes, and new connections time out."""
        self._dropping.set()
        # listen(0) holds one pending connection; with the filler in it (nobody accepts while
        # dropping), the kernel drops every further SYN.
        self._listener.listen(0)
        self._filler = socket.create_connection(("127.0.0.1", self.port))

    def restore(self) -> None:
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for sock in pair:
                with contextlib.suppress(OSError):
                    sock.close()
        if self._filler is not None:
            self._filler.close()
            self._filler = None
        self._listener.listen(64)
        self._dropping.clear()

    def close(self) -> None:
        self._closed.set()
        for sock in (self._listener, self._filler):
            if sock is not None:
                sock.close()
