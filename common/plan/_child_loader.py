"""Loading a submitted topology file in a child process, bounded in time and memory.

A topology file is Python: loading it runs whatever its top level does. A
process that must keep serving (the master) never does that itself:
``load_isolated`` starts ``python -P -m headwater.common.plan._child_loader
ENTRY`` in the unpacked package's folder, and the child sets its own address
space limit (``RLIMIT_AS``, ``LoadLimits.memory_bytes``), asks to die with
its parent, loads the file as every container will (``_loader``), and prints
the topology's description (``_description``) as one JSON document on its
standard output (what the file itself prints goes to standard error). The
parent awaits it on its event loop, so it goes on serving meanwhile, and
kills the child's whole process group when it exits or after
``LoadLimits.time_s``. A load that runs out of time or memory, exits,
crashes, raises or prints something that is not a description is a
``TopologyLoadError`` saying which; the parent gets a skeleton
(``from_description``) and never the code.

Not a jail: the child has the parent's user, files and network, and a
process it starts in a new session outlives it. It bounds what loading a
file does to the process that asked, which is what the master needs; the
containers on the nodes run the same code anyway.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import ctypes.util
import json
import logging
import os
import resource
import signal
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._exceptions import TopologyLoadError
from .._sandbox import RunAs
from ..api import Topology
from ._description import describe, from_description
from ._loader import _load

LOAD_TIME_LIMIT_S = 30.0
"""How long loading a submitted file may take, by default."""
LOAD_MEMORY_BYTES = 1 << 30
"""The address space the loading process may use, by default (1 GiB)."""
MAX_DESCRIPTION_BYTES = 16 << 20
"""The longest description the parent reads."""
_STDERR_TAIL = 4096  # what the parent keeps of the child's standard error, for its log
_ERROR_CHARS = 2000  # the longest reason it passes on
_MODULE = "headwater.common.plan._child_loader"
log = logging.getLogger("headwater.plan")


@dataclass(frozen=True)
class LoadLimits:
    """What loading one file in a child process may take: wall-clock seconds and bytes."""

    time_s: float = LOAD_TIME_LIMIT_S
    memory_bytes: int = LOAD_MEMORY_BYTES


async def load_isolated(
    folder: Path,
    entry: str,
    limits: LoadLimits = LoadLimits(),
    *,
    name: str | None = None,
    run_as: RunAs | None = None,
) -> Topology:
    """The skeleton of the topology ``folder / entry`` defines, loaded in a child process.

    ``name``: the topology of that name, where the file defines several. ``run_as``: the
    child runs as that user (a node's topology user, ``common/_sandbox.py``).

    Runs on the event loop and never blocks it. Raises TopologyLoadError when
    the load is refused (the reason says why: time, memory, exit, crash,
    exception, or a file that defines no single topology). Cancelling it
    kills the child.
    """
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-P",  # the package's folder does not shadow headwater
        "-m",
        _MODULE,
        entry,
        "--memory",
        str(limits.memory_bytes),
        "--parent",
        str(os.getpid()),
        *(["--name", name] if name else []),
        cwd=folder,
        env=run_as.env(_child_env()) if run_as is not None else _child_env(),
        preexec_fn=run_as.preexec if run_as is not None else None,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # its own process group: what the file starts dies with it
    )
    assert proc.stdout is not None and proc.stderr is not None
    out = asyncio.create_task(_read_capped(proc.stdout, MAX_DESCRIPTION_BYTES))
    err = asyncio.create_task(_read_tail(proc.stderr, _STDERR_TAIL))
    timed_out = False
    try:
        await asyncio.wait_for(proc.wait(), limits.time_s)
    except TimeoutError:
        timed_out = True
    finally:
        _kill_group(proc.pid)  # what the file started goes too; also when we are cancelled
    if timed_out:
        await proc.wait()
    await asyncio.wait({out, err}, timeout=1.0)  # the group is dead: its pipes are closing
    for task in (out, err):
        task.cancel()
    text = out.result() if out.done() and not out.cancelled() else None
    tail = err.result() if err.done() and not err.cancelled() else b""
    try:
        return _outcome(entry, limits, timed_out, proc.returncode, text)
    except TopologyLoadError as exc:
        if tail:
            _log_tail(entry, exc, tail)
        raise


def load_isolated_blocking(
    folder: Path,
    entry: str,
    limits: LoadLimits = LoadLimits(),
    *,
    name: str | None = None,
    run_as: RunAs | None = None,
) -> Topology:
    """``load_isolated`` for a synchronous caller: blocks the calling thread (an event loop's
    too) until the child is done, so keep it to rare loads whose result is kept (an agent
    loads each package it runs once)."""
    with ThreadPoolExecutor(1, thread_name_prefix="headwater-load") as pool:
        load = load_isolated(folder, entry, limits, name=name, run_as=run_as)
        return pool.submit(asyncio.run, load).result()


def _outcome(
    entry: str, limits: LoadLimits, timed_out: bool, code: int | None, text: bytes | None
) -> Topology:
    if timed_out:
        raise TopologyLoadError(
            f"loading {entry} took longer than {limits.time_s:g} s, the time limit: a topology "
            "file should only build the topology when it runs; do slow work in the components "
            "(open, prepare), not at the top level"
        )
    if code is None or code < 0:
        name = _signal_name(-(code or 0))
        raise TopologyLoadError(
            f"the process loading {entry} was killed by {name} (it may have run out of memory: "
            f"the limit is {_mib(limits.memory_bytes)} MiB)"
        )
    if code != 0:
        raise TopologyLoadError(
            f"{entry} ended the process loading it (exit code {code}) before it defined a "
            "topology: do not call os._exit or exit at the top level of a topology file"
        )
    if text is None:
        raise TopologyLoadError(
            f"loading {entry} printed more than {MAX_DESCRIPTION_BYTES >> 20} MiB of description, "
            "or left a process behind that holds its output"
        )
    if not text:
        raise TopologyLoadError(
            f"{entry} ended the process loading it (exit code 0) before it defined a topology: "
            "do not call os._exit at the top level of a topology file"
        )
    try:
        result = json.loads(text)
    except ValueError:
        raise TopologyLoadError(
            f"the process loading {entry} printed something that is not a topology's description"
        ) from None
    if isinstance(result, dict) and isinstance(result.get("error"), str):
        raise TopologyLoadError(result["error"][:_ERROR_CHARS])
    if not isinstance(result, dict) or "topology" not in result:
        raise TopologyLoadError(
            f"the process loading {entry} printed something that is not a topology's description"
        )
    return from_description(result["topology"])


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


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # gone already
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


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g}"


def _log_tail(entry: str, exc: TopologyLoadError, tail: bytes) -> None:
    text = tail.decode(errors="replace").strip()
    log.info("loading %s refused: %s; its last output:\n%s", entry, exc, text)


# -- the child ----------------------------------------------------------------------------
_PR_SET_PDEATHSIG = 1


def main(argv: list[str] | None = None) -> None:
    """Load ENTRY under the limits and print ``{"topology": ...}`` or ``{"error": ...}``."""
    parser = argparse.ArgumentParser(prog=f"python -m {_MODULE}")
    parser.add_argument("entry")
    parser.add_argument("--memory", type=int, default=LOAD_MEMORY_BYTES)
    parser.add_argument("--parent", type=int, default=0)
    parser.add_argument("--name", default=None)
    args = parser.parse_args(argv)
    _die_with_parent(args.parent)
    out = os.dup(1)
    os.dup2(2, 1)  # the file's own prints go to standard error, never into the description
    resource.setrlimit(resource.RLIMIT_AS, (args.memory, args.memory))
    result = _described(args.entry, args.memory, args.name)
    data = json.dumps(result).encode()
    while data:
        data = data[os.write(out, data) :]
    os._exit(0)  # not the file's atexit hooks, nor its threads


def _described(entry: str, memory: int, name: str | None = None) -> dict[str, Any]:
    too_big = (
        f"loading {entry} needs more than {_mib(memory)} MiB of memory, the limit: a topology "
        "file should only build the topology when it runs; allocate in the components "
        "(open, prepare), not at the top level"
    )
    try:
        return {"topology": describe(_load(entry, name))}
    except MemoryError:
        return {"error": too_big}
    except TopologyLoadError as exc:
        traceback.print_exc()
        return {"error": too_big if isinstance(exc.__cause__, MemoryError) else str(exc)}
    except BaseException as exc:  # whatever the file raises, even SystemExit from describe
        traceback.print_exc()
        return {"error": f"loading {entry} failed: {type(exc).__name__}: {_text(exc)}"}


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # a user exception whose __str__ raises
        return "(no message)"


def _die_with_parent(parent: int) -> None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        return  # not Linux: the parent's kill after the time limit still ends it
    if parent and os.getppid() != parent:
        os._exit(1)  # the parent died before the line above


if __name__ == "__main__":
    main()
