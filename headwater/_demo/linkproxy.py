"""A TCP proxy on loopback whose link can be cut and restored (tests and benchmarks).

Put it between an agent and the cloud: ``--master`` its address (it relays
to ``target``, the master) and ``--ingress-proxy`` its address too (it is
also an HTTP CONNECT proxy, so the agent's uplink streams reach the cloud's
stream managers through it). While cut, it closes every connection through
it and refuses new ones at once (accept, then close): to the agent, the
whole cloud is unreachable, the master and the data path alike.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time


class LinkProxy:
    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self.address = f"127.0.0.1:{self.port}"
        self._listener.setblocking(False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._listener, selectors.EVENT_READ)
        self._peer: dict[socket.socket, socket.socket] = {}
        self._cut = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.connections = 0
        self.refused = 0  # connections turned away while cut
        self._thread = threading.Thread(target=self._run, name="link-proxy", daemon=True)
        self._thread.start()

    def cut(self) -> None:
        self._cut.set()

    def restore(self) -> None:
        self._cut.clear()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for s in list(self._peer):
            s.close()
        self._listener.close()

    def _target_of(self, client: socket.socket) -> tuple[tuple[str, int], bytes]:
        """Where a new connection goes: ``target``, or where its HTTP CONNECT asks (and the
        answer it is owed). Clients speak first (gRPC's preface, or CONNECT)."""
        client.settimeout(2)
        head = client.recv(4096, socket.MSG_PEEK)
        if not head.startswith(b"CONNECT "):
            return self.target, b""
        for _ in range(200):  # the rest of the request, for up to 2 s
            if b"\r\n\r\n" in head:
                break
            time.sleep(0.01)
            head = client.recv(4096, socket.MSG_PEEK)
        else:
            raise OSError("an incomplete CONNECT request")
        end = head.index(b"\r\n\r\n") + 4
        client.recv(end)  # the request is this proxy's; what follows goes through
        host, _, port = head.split(b" ", 2)[1].decode().rpartition(":")
        return (host.strip("[]"), int(port)), b"HTTP/1.1 200 Connection established\r\n\r\n"

    def _drop(self, s: socket.socket) -> None:
        other = self._peer.pop(s, None)
        for sock in (s, other):
            if sock is None:
                continue
            with contextlib.suppress(KeyError, ValueError):
                self._sel.unregister(sock)
            sock.close()
            self._peer.pop(sock, None)

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._cut.is_set() and self._peer:
                for s in list(self._peer):
                    if s in self._peer:
                        self._drop(s)
            for key, _ in self._sel.select(timeout=0.05):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self._listener:
                    try:
                        client, _ = self._listener.accept()
                    except BlockingIOError:
                        continue
                    if self._cut.is_set():
                        client.close()
                        self.refused += 1
                        continue
                    try:
                        target, reply = self._target_of(client)
                        upstream = socket.create_connection(target, timeout=2)
                        client.sendall(reply)
                    except OSError:
                        client.close()
                        continue
                    self.connections += 1
                    for s in (client, upstream):
                        s.setblocking(False)
                        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        self._sel.register(s, selectors.EVENT_READ)
                    self._peer[client], self._peer[upstream] = upstream, client
                    continue
                if sock not in self._peer:
                    continue
                try:
                    data = sock.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:
                    self._drop(sock)
                    continue
                other = self._peer[sock]
                try:
                    other.setblocking(True)
                    other.sendall(data)
                    other.setblocking(False)
                except OSError:
                    self._drop(sock)
