"""An instance's gateway thread: socket I/O with the container's stmgr.

One thread multiplexes reads and writes on the Unix socket with a selector,
as Heron's Python instance does with asyncore. Reading stops while the
data-in queue is above its high water mark (so the stmgr's buffer to this
instance fills and the stmgr starts backpressure) and resumes below the low
mark. The executor wakes the gateway through a socketpair when it queues
output or drains input. A frame the executor sends while nothing is queued ahead of it is
written to the socket from the executor's own thread (``send``): the wake-up and two thread
switches per frame are the gateway's only when the socket is full or the gateway busy.

The gateway also sends a heartbeat every ``HEARTBEAT_S``, from its own
thread, so a busy executor (user code taking long) still looks alive while a
stopped or hung process (SIGSTOP, a deadlock) falls silent and its container
kills and restarts it.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import threading
import time
from collections import deque

from ..wire import FrameReader
from ..wire._control import Alive, control_frame
from ..wire._frame import length_prefix
from ._queues import ByteQueue

log = logging.getLogger(__name__)
_WRITE_CHUNK = 1 << 20
HEARTBEAT_S = 1.0
_HEARTBEAT = control_frame(Alive(), src=0)


class Gateway(threading.Thread):
    def __init__(
        self,
        sock: socket.socket,
        inbox: ByteQueue,
        outbox: ByteQueue,
        metrics_out: deque[bytes],
    ) -> None:
        super().__init__(name="hw-gateway", daemon=True)
        self.sock = sock
        self.inbox = inbox
        self.outbox = outbox
        self.metrics_out = metrics_out
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._halt = threading.Event()
        # True while the loop may block in select(). Set before the loop drains
        # the outbox, so a frame queued after that drain always finds it True.
        self.idle = False
        self.reading = True  # False while the inbox is above its high mark
        self.eof = threading.Event()
        self._pending = bytearray()  # bytes taken from the queues, not yet written
        # the socket's writes and ``_pending``: this thread's and the executor's direct sends
        self._writing = threading.Lock()
        self._direct = False  # True while run() owns a non-blocking socket

    def send(self, frame: bytes) -> None:
        """The executor's way out: ``frame`` is written at once when nothing is queued ahead
        of it (what the socket does not take waits first in line), else queued for this
        thread; the outbox's high mark blocks the caller as before."""
        if self._direct and not self._pending and not self.outbox and self._writing.acquire(False):
            try:
                if self._direct and not self._pending and not self.outbox:
                    prefix = length_prefix(frame)
                    try:
                        sent = self.sock.sendmsg((prefix, frame))
                    except BlockingIOError:
                        sent = 0
                    except OSError:  # closing: the queue keeps it, as it did
                        sent = -1
                    if sent > 0:
                        if sent < len(prefix) + len(frame):
                            self._pending += (prefix + frame)[sent:]
                            self.wake()
                        return
            finally:
                self._writing.release()
        self.outbox.put(frame)
        self.wake()

    def wake(self) -> None:
        """Threadsafe: make the gateway look at its queues now (a no-op while it is busy)."""
        if not self.idle:
            return
        # BlockingIOError: a wake-up is already pending; OSError: shutting down
        with contextlib.suppress(OSError):
            self._wake_w.send(b"\0")

    def stop(self) -> None:
        self._halt.set()
        self._direct = False  # what is sent from now on goes through the queue, in order
        self.idle = True
        self.wake()

    def close(self, timeout: float) -> None:
        """Stop, and wait up to ``timeout`` for what is queued to be sent. A gateway that never
        started (its instance was stopped while it loaded) has nothing to send: it only
        closes its wake-up pair. Call it from the thread that would have started it."""
        self.stop()
        if self.ident is None:
            self._wake_r.close()
            self._wake_w.close()
        else:
            self.join(timeout)

    def run(self) -> None:
        sock = self.sock
        sock.setblocking(False)
        self._direct = True
        if self._halt.is_set():  # after: a stop() at any moment leaves it False
            self._direct = False
        sel = selectors.DefaultSelector()
        sel.register(self._wake_r, selectors.EVENT_READ)
        sel.register(sock, selectors.EVENT_READ)
        reader = FrameReader()
        self.reading = reading = True
        interest = selectors.EVENT_READ
        next_beat = 0.0
        try:
            while True:
                self.idle = True
                now = time.monotonic()
                if now >= next_beat:  # deque(maxlen): never more than a few queued
                    self.metrics_out.append(_HEARTBEAT)
                    next_beat = now + HEARTBEAT_S
                with self._writing:
                    self._fill()
                    done = self._halt.is_set() and not self._pending
                if done:
                    break
                want = (selectors.EVENT_READ if reading else 0) | (
                    selectors.EVENT_WRITE if self._pending else 0
                )
                if want != interest:
                    if interest:
                        sel.unregister(sock)
                    if want:
                        sel.register(sock, want)
                    interest = want
                events = sel.select(timeout=0.5)
                self.idle = False
                for key, mask in events:
                    if key.fileobj is self._wake_r:
                        with contextlib.suppress(BlockingIOError):
                            while self._wake_r.recv(4096):
                                pass
                        continue
                    if mask & selectors.EVENT_READ:
                        try:
                            data = sock.recv(1 << 20)
                        except BlockingIOError:
                            data = None
                        if data == b"":
                            self.eof.set()
                            self.inbox.close()
                            return
                        if data:
                            for frame in reader.feed(data):
                                self.inbox.put(frame, block=False)
                    if mask & selectors.EVENT_WRITE and self._pending:
                        self._write()
                # hysteresis: stop reading above the high mark, resume below the low mark
                if reading and self.inbox.nbytes >= self.inbox.high:
                    self.reading = reading = False
                elif not reading and self.inbox.nbytes <= self.inbox.low:
                    self.reading = reading = True
        except OSError as exc:
            log.debug("gateway socket closed: %s", exc)
            self.eof.set()
            self.inbox.close()
        finally:
            self._direct = False
            sel.close()
            # an instance on a thread (the small footprint) must not leak them: a wake-up
            # after this finds them closed (OSError, ignored)
            self._wake_r.close()
            self._wake_w.close()

    def _write(self) -> None:
        with self._writing:
            try:
                sent = self.sock.send(self._pending)
            except BlockingIOError:
                sent = 0
            del self._pending[:sent]

    def _fill(self) -> None:
        if len(self._pending) >= _WRITE_CHUNK:
            return
        pending = self._pending
        while self.metrics_out:
            frame = self.metrics_out.popleft()
            pending += length_prefix(frame)
            pending += frame
        for frame in self.outbox.drain(_WRITE_CHUNK):
            pending += length_prefix(frame)
            pending += frame
