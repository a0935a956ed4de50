"""Instance processes forked from a process that has already imported them: a fork server.

An instance process spends most of its start on the interpreter's own start and its
imports (the runtime, the API, the plan: about 0.3 CPU-s, measured by ``python -m bench
startup``), the same in every instance. A container started with ``--fork-instances``
(``headwater run``'s) starts one ``ForkServer`` child beside itself instead, at once, which
imports ``instance`` and waits; each instance is then a fork of it, started in a few
milliseconds. The server never starts a thread (checked before each fork: a fork of a
threaded process could inherit a held lock), so the fork is safe; its child becomes the
instance process exactly as ``spawn`` starts one: its log (opened the same way) as stdout
and stderr, ``/dev/null`` as stdin, SIGKILLed when its parent dies, SIGINT ignored until
it sets its own handler, ``sys.argv`` as ``python -m ...instance ARGS`` gives it (its
command line in ``ps`` stays the server's; its name, ``hw-task-N``, says which task); then it
runs ``instance.main(ARGS)`` and exits through the interpreter's normal end. Its parent is
the server, which dies with the container, so an instance still dies with its container.

The container's side, ``ForkServer.launch``, returns a ``ForkedProc`` (a ``Proc``) at
once: the server answers each request with the child's pid, and reports each child's exit
status (as ``Popen.returncode`` gives it: negative for a signal) as it reaps it. The
protocol is JSON lines on the server's stdin and stdout; a thread of the container reads
the answers. A server that is gone (killed, crashed) ends its children (they die with it),
which are reported killed; the container then starts its instances with ``spawn`` again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Sequence
from functools import partial
from typing import IO, Any

from ._procs import NO_GRPC_FORK_HANDLERS, _before_exec, _libc, _open_log

log = logging.getLogger("headwater.container")
KILLED = -signal.SIGKILL  # the status of a child whose server went away
_PR_SET_NAME = 15


class ForkedProc:
    """One instance process forked by the server: what ``Supervisor`` needs of a ``Popen``."""

    def __init__(self, server: ForkServer) -> None:
        self._server = server
        self._pid: int | None = None  # until the server answers

    @property
    def pid(self) -> int:
        with self._server.changed:
            self._server.changed.wait_for(lambda: self._pid is not None)
            assert self._pid is not None
            return self._pid

    @property
    def returncode(self) -> int | None:
        with self._server.changed:
            return self._server.exits.get(self) if self._pid is not None else None

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        with self._server.changed:
            if not self._server.changed.wait_for(lambda: self in self._server.exits, timeout):
                raise subprocess.TimeoutExpired(["instance", str(self._pid)], timeout or 0.0)
            return self._server.exits[self]

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _signal(self, sig: int) -> None:
        pid = self.pid  # 0 for one its server never forked (gone first): reported dead
        if pid > 0 and self.returncode is None:  # not yet reaped: the pid is still its
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)


class ForkServer:
    """The container's side: start the server, ask it for instance processes."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self._proc = proc
        self._to: IO[bytes] = proc.stdin  # type: ignore[assignment]
        self.changed = threading.Condition()
        self._asked: deque[ForkedProc] = deque()  # waiting for their pid, in order
        self._by_pid: dict[int, ForkedProc] = {}
        self.exits: dict[ForkedProc, int] = {}
        self.alive = True
        self._closing = False
        self._reader = threading.Thread(target=self._read, name="hw-forkserver", daemon=True)
        self._reader.start()

    @classmethod
    def start(cls) -> ForkServer:
        """Start the server (it dies with this process, as ``spawn``'s children do)."""
        proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "headwater.common.runtime._forkserver"],
            env={**os.environ, **NO_GRPC_FORK_HANDLERS},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,  # its answers; its stderr is this process's (its log)
            preexec_fn=partial(_before_exec, None),  # noqa: PLW1509 (no locks taken there)
        )
        return cls(proc)

    def launch(self, args: Sequence[str], log_path: str) -> ForkedProc:
        """An instance process running ``instance.main(args)``, its output in ``log_path``."""
        proc = ForkedProc(self)
        line = json.dumps({"args": list(args), "log": log_path}).encode() + b"\n"
        with self.changed:
            if not self.alive:
                raise OSError("the fork server is gone")
            self._asked.append(proc)
            try:
                self._to.write(line)
                self._to.flush()
            except OSError:
                self._asked.remove(proc)
                raise
        return proc

    def close(self) -> None:
        """End the server (its instances die with it) and wait for it."""
        with self.changed:
            self._closing = True
            self._to.close()  # it ends at the end of its input
        self._proc.wait()
        self._reader.join()
        if self._proc.stdout is not None:
            self._proc.stdout.close()

    def _read(self) -> None:
        out = self._proc.stdout
        assert out is not None
        for raw in out:
            msg = json.loads(raw)
            with self.changed:
                if "pid" in msg:
                    proc = self._asked.popleft()
                    proc._pid = msg["pid"]
                    self._by_pid[msg["pid"]] = proc
                elif "exit" in msg:
                    self.exits[self._by_pid.pop(msg["exit"])] = msg["code"]
                self.changed.notify_all()
        with self.changed:  # gone: its children died with it
            self.alive = False
            for proc in self._asked:
                proc._pid = 0
                self.exits[proc] = KILLED
            self._asked.clear()
            for proc in self._by_pid.values():
                self.exits[proc] = KILLED
            self._by_pid.clear()
            self.changed.notify_all()
        code = self._proc.wait()
        if not self._closing:
            log.warning("the instances' fork server exited with %s", code)


def _send(msg: dict[str, Any]) -> None:
    os.write(1, json.dumps(msg).encode() + b"\n")


def serve() -> dict[str, Any] | None:
    """The server's loop. Returns a request in a forked child (to run it), None at the end
    (the container closed its side)."""
    from . import instance  # noqa: F401  (what every fork then has: the point of it)

    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    pending = b""
    while True:
        ready, _, _ = select.select([0, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 512)
            _reap()
        if 0 not in ready:
            continue
        data = os.read(0, 65536)
        if not data:
            return None  # the container is gone: its instances die with this process
        pending += data
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            request = json.loads(line)
            if threading.active_count() > 1:
                raise RuntimeError("the fork server started a thread: it cannot fork safely")
            server = os.getpid()
            pid = os.fork()
            if pid == 0:
                request["server"] = server
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                os.close(wake_r)
                os.close(wake_w)
                return request  # type: ignore[no-any-return]
            _send({"pid": pid})


def _reap() -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send({"exit": pid, "code": os.waitstatus_to_exitcode(status)})


def become_instance(request: dict[str, Any]) -> int:
    """In a forked child: become the instance process ``spawn`` would have started."""
    out = _open_log(request["log"])
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out.fileno(), 1)
    os.dup2(out.fileno(), 2)
    os.close(null)
    out.close()
    _before_exec(None)  # dies with the server, SIGINT ignored: as a spawned child
    if os.getppid() != request["server"]:  # the server died before that: die with it
        os._exit(1)
    args = request["args"]
    if "--task" in args:  # its name in ps and top (its command line is the server's)
        _libc.prctl(_PR_SET_NAME, f"hw-task-{args[args.index('--task') + 1]}".encode()[:15])
    from . import instance

    sys.argv = [instance.__file__, *request["args"]]
    return instance.main(request["args"])


def main() -> int:
    request = serve()
    return 0 if request is None else become_instance(request)


if __name__ == "__main__":
    sys.exit(main())
