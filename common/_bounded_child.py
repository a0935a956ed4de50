"""Running untrusted work in a child process bounded in time and memory, for any layer.

The one runner of its kind: topology files are loaded with it
(``common/plan/_child_loader.py``), submitted Spark job files imported
(``cloud/master/_spark_check.py``) and ONNX models checked
(``common/models/_onnx.py``). ``run_bounded`` starts ``python -P -m MODULE
ARGS...`` in its own session (in ``cwd``, as ``run_as``'s user where given),
hands it ``stdin`` bytes, awaits it on the event loop (the caller goes on
serving) and kills its whole process group when it exits or after
``ChildLimits.time_s``. The child calls ``child_start`` first: it asks to die
with its parent, sets its own address space limit (``RLIMIT_AS``) and moves
its standard output aside, so that only ``child_answer``'s one JSON document
reaches the parent (what libraries print goes to standard error, of which the
parent keeps a tail for its log).

Not a jail: the child has the parent's user (or ``run_as``'s), files and
network, and a process it starts in a new session outlives it. It bounds what
the work does to the process that asked, which is what the master needs.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ._sandbox import RunAs

if TYPE_CHECKING:
    import asyncio

_PR_SET_PDEATHSIG = 1
_STDERR_TAIL = 4096


@dataclass(frozen=True)
class ChildLimits:
    """What one child may take: wall-clock seconds and bytes of address space."""

    time_s: float
    memory_bytes: int

    def memory_mib(self) -> str:
        """``memory_bytes`` in MiB, for a message."""
        return mib(self.memory_bytes)


@dataclass(frozen=True)
class ChildOutcome:
    """How a child ended: ``output`` what it wrote to its answer's descriptor (None: more
    than the cap); ``code`` its exit status (negative: a signal)."""

    timed_out: bool
    code: int | None
    output: bytes | None
    stderr_tail: bytes

    @property
    def answer(self) -> Any:
        """The child's JSON document: None when it printed none, more than the cap, or not
        JSON."""
        if not self.output:
            return None
        try:
            return json.loads(self.output)
        except ValueError:
            return None

    def signal_name(self) -> str:
        """The signal that ended it (``code`` negative): ``SIGKILL``."""
        return signal_name(self.code)


async def run_bounded(
    module: str,
    args: list[str],
    stdin: bytes | None,
    limits: ChildLimits,
    max_answer: int = 1 << 20,
    env: dict[str, str] | None = None,
    *,
    cwd: Path | None = None,
    run_as: RunAs | None = None,
) -> ChildOutcome:
    """Run ``python -P -m module args`` with ``stdin`` (None: none) under ``limits``, in
    ``cwd`` (None: here); ``env``: set in its environment too; ``run_as``: as that user, with
    its environment (``common/_sandbox.py``). Never raises for what the child does (it is in
    the outcome). Cancelling it kills the child."""
    import asyncio  # here: a process that imports this module may never run a child

    child_env = {**_child_env(), **(env or {})}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-P",  # the child's folder does not shadow headwater
        "-m",
        module,
        *args,
        "--memory",
        str(limits.memory_bytes),
        "--parent",
        str(os.getpid()),
        cwd=cwd,
        env=run_as.env(child_env) if run_as is not None else child_env,
        preexec_fn=run_as.preexec if run_as is not None else None,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # its own process group: what it starts dies with it
    )
    assert proc.stdout is not None and proc.stderr is not None
    out = asyncio.create_task(_read_capped(proc.stdout, max_answer))
    err = asyncio.create_task(_read_tail(proc.stderr, _STDERR_TAIL))
    tasks = {out, err}
    if stdin is not None:
        assert proc.stdin is not None
        tasks.add(asyncio.create_task(_feed(proc.stdin, stdin)))
    timed_out = False
    try:
        async with asyncio.timeout(limits.time_s):
            await proc.wait()
    except TimeoutError:
        timed_out = True
    finally:
        kill_group(proc.pid)  # what the child started goes too; also when we are cancelled
    if timed_out:
        await proc.wait()
    await asyncio.wait(tasks, timeout=1.0)  # the group is dead: its pipes are closing
    for task in tasks:
        task.cancel()
    text = out.result() if out.done() and not out.cancelled() else None
    tail = err.result() if err.done() and not err.cancelled() else b""
    return ChildOutcome(timed_out, proc.returncode, text, tail)


async def _feed(stream: asyncio.StreamWriter, data: bytes) -> None:
    with contextlib.suppress(ConnectionError):  # the child ended before reading it all
        stream.write(data)
        await stream.drain()
        stream.close()


async def _read_capped(stream: asyncio.StreamReader, limit: int) -> bytes | None:
    """All of ``stream``, or None once it passes ``limit`` bytes (then drained unkept)."""
    chunks: list[bytes] = []
    size = 0
    while chunk := await stream.read(65536):
        size += len(chunk)
        if size <= limit:
            chunks.append(chunk)
        else:
            chunks.clear()
    return b"".join(chunks) if size <= limit else None


async def _read_tail(stream: asyncio.StreamReader, keep: int) -> bytes:
    """The last ``keep`` bytes of ``stream``."""
    tail = b""
    while chunk := await stream.read(65536):
        tail = (tail + chunk)[-keep:]
    return tail


def kill_group(pgid: int) -> None:
    """SIGKILL process group ``pgid`` (gone already: nothing)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _child_env() -> dict[str, str]:
    """This environment, with the folder this headwater was imported from first on the path."""
    root = str(Path(sys.modules["headwater"].__file__ or ".").resolve().parent.parent)
    path = os.environ.get("PYTHONPATH")
    return {
        **os.environ,
        "PYTHONPATH": root + (os.pathsep + path if path else ""),
        "PYTHONDONTWRITEBYTECODE": "1",  # nothing written beside a package's files
    }


def signal_name(code: int | None) -> str:
    """The name of the signal exit status ``code`` (negative) says: ``SIGKILL``."""
    number = -(code or 0)
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def mib(n: int) -> str:
    """``n`` bytes in MiB, for a message: ``1024``, ``0.5``."""
    return f"{n / (1 << 20):g}"


# -- in the child -------------------------------------------------------------------------
def child_start(memory: int, parent: int) -> int:
    """Die with ``parent``, limit the address space to ``memory`` bytes, send standard output
    to standard error; the descriptor of the real standard output (for ``child_answer``)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the C library loaded (no `ldconfig -p` child)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass  # not Linux: the parent's kill after the time limit still ends it
    if parent and os.getppid() != parent:
        os._exit(1)  # the parent died before the line above
    out = os.dup(1)
    os.dup2(2, 1)
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    return out


def child_answer(fd: int, doc: dict[str, Any]) -> NoReturn:
    """Write ``doc`` as JSON to ``fd`` and end the process at once (no atexit hooks)."""
    data = json.dumps(doc).encode()
    while data:
        data = data[os.write(fd, data) :]
    os._exit(0)
