"""A TCP proxy on loopback whose link can be cut and restored (tests and benchmarks).

Put it between an agent and the cloud: ``--master`` its address (it relays
to ``target``, the master) and ``--ingress-proxy`` its address too (it is
also an HTTP CONNECT proxy, so the agent's uplink streams reach the cloud's
stream managers through it). While cut, it closes every connection through
it and refuses new ones at once (accept, then close): to the agent, the
whole cloud is unreachable, the master and the data path alike.
"""

from __future__ import annotations

import selectors
import socket
import threading
import time

MAX_PENDING = 4 << 20
"""The most bytes one side's sends wait for the other to take before the proxy stops reading
it (what TCP does between two peers)."""


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
        self._out: dict[socket.socket, bytearray] = {}  # what waits to be sent to each
        self._watched: set[socket.socket] = set()  # registered with the selector
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
            if sock in self._watched:
                self._sel.unregister(sock)
                self._watched.discard(sock)
            sock.close()
            self._peer.pop(sock, None)
            self._out.pop(sock, None)

    def _watch(self, sock: socket.socket) -> None:
        """Read ``sock`` unless what it sent waits to go out (its peer reads slowly: each
        side's backlog stays under ``MAX_PENDING``), and write it while it has some to take."""
        other = self._peer.get(sock)
        events = 0
        if other is not None and len(self._out.get(other, b"")) < MAX_PENDING:
            events |= selectors.EVENT_READ
        if self._out.get(sock):
            events |= selectors.EVENT_WRITE
        watched = sock in self._watched
        if events and watched:
            self._sel.modify(sock, events)
        elif events:
            self._sel.register(sock, events)
            self._watched.add(sock)
        elif watched:  # nothing to wait for on it until its peer drains
            self._sel.unregister(sock)
            self._watched.discard(sock)

    def _flush(self, sock: socket.socket) -> bool:
        """Send what waits for ``sock`` without blocking; False if its link broke."""
        pending = self._out.get(sock)
        if pending:
            try:
                sent = sock.send(pending)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                return False
            del pending[:sent]
        return True

    def _accept(self) -> None:
        try:
            client, _ = self._listener.accept()
        except BlockingIOError:
            return
        if self._cut.is_set():
            client.close()
            self.refused += 1
            return
        try:
            target, reply = self._target_of(client)
            upstream = socket.create_connection(target, timeout=2)
            client.sendall(reply)
        except OSError:
            client.close()
            return
        self.connections += 1
        for s in (client, upstream):
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sel.register(s, selectors.EVENT_READ)
            self._watched.add(s)
            self._out[s] = bytearray()
        self._peer[client], self._peer[upstream] = upstream, client

    def _run(self) -> None:
        """One thread, no blocking call on a link: what one side sends waits in a buffer
        until the other can take it (a blocking send here would stall both directions)."""
        while not self._stop.is_set():
            if self._cut.is_set() and self._peer:
                for s in list(self._peer):
                    if s in self._peer:
                        self._drop(s)
            for key, mask in self._sel.select(timeout=0.05):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self._listener:
                    self._accept()
                    continue
                if sock not in self._peer:
                    continue
                other = self._peer[sock]
                if mask & selectors.EVENT_WRITE:
                    if not self._flush(sock):
                        self._drop(sock)
                        continue
                    self._watch(sock)
                    self._watch(other)  # it may read again
                if not mask & selectors.EVENT_READ or sock not in self._peer:
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
                self._out[other] += data
                if not self._flush(other):
                    self._drop(sock)
                    continue
                self._watch(other)
                self._watch(sock)
