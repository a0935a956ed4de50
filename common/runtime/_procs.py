"""Child processes that die with their parent (Linux PR_SET_PDEATHSIG) and leave Ctrl-C to it."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import BinaryIO, Protocol

from .._sandbox import RunAs

log = logging.getLogger("headwater.procs")
_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


NO_GRPC_FORK_HANDLERS = {"GRPC_ENABLE_FORK_SUPPORT": "false"}
"""Every child is fork-then-exec, never a forked gRPC user, so gRPC's fork handlers only do
harm: a child forked while a channel is busy can die before its exec (epoll_wait: Bad file
descriptor). ``import headwater`` turns them off for its own process; this turns them off
in every child too. Read when grpc is first imported."""


class Proc(Protocol):
    """What supervises a child: a ``subprocess.Popen``, or an instance on a thread
    (``_threads.InstanceThread``, the small footprint)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...


_libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
_libc.signal.restype = ctypes.c_void_p
_SIG_IGN = 1


def _die_with_parent() -> None:
    # Runs in the child between fork and exec. SIGKILL on parent death means a
    # killed stmgr or launcher can never leave orphans behind. SIGINT ignored: a terminal's
    # Ctrl-C reaches the whole process group, and a child still starting (its interpreter
    # not yet past its imports) would die of it with a traceback in its log; its parent
    # stops it (SIGTERM), in order, as pyspark does for Spark's JVM. A child that sets a
    # SIGINT handler of its own (every Headwater daemon does) gets it again from then on.
    # libc's signal(): Python's may only be called on the main thread.
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    _libc.signal(signal.SIGINT, _SIG_IGN)


_LOG_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW


def _open_log(path: str) -> BinaryIO:
    """The child's log, opened to append: a regular file, never through a final symlink nor
    into a FIFO (OSError), since a child's code may own the folder its log lies in."""
    fd = os.open(path, _LOG_FLAGS | os.O_NONBLOCK, 0o600)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file: no log is written there")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "ab")
    except BaseException:
        os.close(fd)
        raise


def _before_exec(preexec: Callable[[], None] | None) -> None:
    if preexec is not None:
        preexec()
    _die_with_parent()  # after a change of user, which clears it


def _then(first: Callable[[], None] | None, second: Callable[[], None]) -> Callable[[], None]:
    if first is None:
        return second

    def both() -> None:
        first()
        second()

    return both


def spawn(
    args: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    log_path: str | None = None,
    executable: str | None = None,
    cwd: str | None = None,
    preexec: Callable[[], None] | None = None,
    run_as: RunAs | None = None,
    stdin: bytes | None = None,
) -> subprocess.Popen[bytes]:
    """Start a child (``python ARGS`` unless ``executable``) that dies when this process dies;
    ``preexec`` runs in the child first, between fork and exec; ``run_as``: the child runs as
    that user, with its environment (``RunAs.env``); ``stdin``: what its standard input
    reads, then its end (a secret handed to it: never on its command line, where ``ps``
    shows it, nor in its environment; at most a pipe's buffer, 64 KiB)."""
    # the log is its process's and this one's: a topology's code as another user reads none
    out = _open_log(log_path) if log_path else None
    environment = {**os.environ, **NO_GRPC_FORK_HANDLERS, **(env or {})}
    if run_as is not None:
        environment = run_as.env(environment)
        preexec = _then(preexec, run_as.preexec)
    try:
        proc = subprocess.Popen(
            # -P: not the current folder first on the path (a module planted there would run)
            [executable, *args] if executable else [sys.executable, "-P", *args],
            env=environment,
            stdout=out or subprocess.DEVNULL,
            stderr=subprocess.STDOUT if out else None,
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            cwd=cwd,
            preexec_fn=partial(_before_exec, preexec),  # noqa: PLW1509 (no locks taken there)
        )
        if proc.stdin is not None and stdin is not None:
            with contextlib.suppress(OSError):  # a child that ended at once reads nothing
                proc.stdin.write(stdin)
            with contextlib.suppress(OSError):
                proc.stdin.close()
        return proc
    finally:
        if out is not None:
            out.close()


def terminate(procs: Sequence[Proc], grace_s: float = 5.0) -> None:
    """SIGTERM, wait up to ``grace_s``, then SIGKILL whatever is left."""
    import time

    for p in procs:
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + grace_s
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def beat_file(workdir: str | os.PathLike[str], container: int) -> Path:
    """The file a container touches every second while its event loop runs."""
    return Path(workdir) / f"c{container}.alive"


class BeatWatch:
    """Which processes stopped touching their beat file: stopped (SIGSTOP) or hung.

    Silence is measured on the monotonic clock from the moment a file's mtime last
    changed, never as wall-clock time minus mtime: a gateway without a real-time clock
    steps its wall clock at NTP sync, which would make every process look silent at once.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._seen: dict[Path, tuple[float, float]] = {}  # beat file -> (mtime, when it changed)

    def silent(self, proc: Proc, beat: Path, limit_s: float) -> float:
        """Seconds ``proc`` has not touched ``beat`` if over ``limit_s``, else 0.

        A file older than the process is a previous incarnation's: not yet beating, not
        silent."""
        import psutil

        try:
            mtime = beat.stat().st_mtime
            started = psutil.Process(proc.pid).create_time()
        except (OSError, psutil.Error):
            return 0.0
        now = self.clock()
        seen = self._seen.get(beat)
        if mtime < started - 1.0 or seen is None or seen[0] != mtime:
            self._seen[beat] = (mtime, now)
            return 0.0
        quiet = now - seen[1]
        return quiet if quiet > limit_s else 0.0

    def kill_if_silent(self, proc: Proc, beat: Path, limit_s: float, what: str) -> None:
        """SIGKILL ``proc`` if it has been silent too long; its supervisor reaps it (``poll``)
        and restarts it as it restarts a dead one. Never waits: a process stuck in the
        kernel (a dying SD card) must not stall the caller's event loop."""
        quiet = self.silent(proc, beat, limit_s)
        if quiet and proc.poll() is None:
            log.warning(
                "%s (pid %d) silent for %.0fs: stopped or hung; killing it", what, proc.pid, quiet
            )
            proc.kill()
            self._seen.pop(beat, None)
