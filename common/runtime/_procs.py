"""Child processes that die with their parent (Linux PR_SET_PDEATHSIG)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
from collections.abc import Sequence

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _die_with_parent() -> None:
    # Runs in the child between fork and exec. SIGKILL on parent death means a
    # killed stmgr or launcher can never leave orphans behind.
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def spawn(
    args: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    log_path: str | None = None,
    executable: str | None = None,
) -> subprocess.Popen[bytes]:
    """Start a child (``python ARGS`` unless ``executable``) that dies when this process dies."""
    out = open(log_path, "ab") if log_path else None  # noqa: SIM115 (the child owns it)
    try:
        return subprocess.Popen(
            [executable or sys.executable, *args],
            env={**os.environ, **(env or {})},
            stdout=out or subprocess.DEVNULL,
            stderr=subprocess.STDOUT if out else None,
            stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 (no threads touch locks here)
        )
    finally:
        if out is not None:
            out.close()


def terminate(procs: Sequence[subprocess.Popen[bytes]], grace_s: float = 5.0) -> None:
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
