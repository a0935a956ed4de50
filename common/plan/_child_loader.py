"""Loading a submitted topology file in a child process, bounded in time and memory.

A topology file is Python: loading it runs whatever its top level does. A
process that must keep serving (the master) never does that itself:
``load_isolated`` starts ``python -P -m headwater.common.plan._child_loader
ENTRY`` in the unpacked package's folder with ``common/_bounded_child.py``'s
``run_bounded``, and the child (``child_start``) sets its own address space
limit (``RLIMIT_AS``, ``LoadLimits.memory_bytes``), asks to die with its
parent, loads the file as every container will (``_loader``), and prints the
topology's description (``_description``) as one JSON document on its
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
import json
import logging
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._bounded_child import (
    ChildLimits,
    ChildOutcome,
    child_answer,
    child_start,
    mib,
    run_bounded,
    signal_name,
)
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
_ERROR_CHARS = 2000  # the longest reason it passes on
_MODULE = "headwater.common.plan._child_loader"
log = logging.getLogger("headwater.plan")


@dataclass(frozen=True)
class LoadLimits(ChildLimits):
    """What loading one file in a child process may take: wall-clock seconds and bytes
    (``ChildLimits``, with the defaults of a load)."""

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
    got = await run_bounded(
        _MODULE,
        [entry, *(["--name", name] if name else [])],
        None,
        limits,
        MAX_DESCRIPTION_BYTES,
        cwd=folder,
        run_as=run_as,
    )
    try:
        return _outcome(entry, limits, got)
    except TopologyLoadError as exc:
        if got.stderr_tail:
            _log_tail(entry, exc, got.stderr_tail)
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


def _outcome(entry: str, limits: LoadLimits, got: ChildOutcome) -> Topology:
    code, text = got.code, got.output
    if got.timed_out:
        raise TopologyLoadError(
            f"loading {entry} took longer than {limits.time_s:g} s, the time limit: a topology "
            "file should only build the topology when it runs; do slow work in the components "
            "(open, prepare), not at the top level"
        )
    if code is None or code < 0:
        raise TopologyLoadError(
            f"the process loading {entry} was killed by {signal_name(code)} (it may have run "
            f"out of memory: the limit is {limits.memory_mib()} MiB)"
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


def _log_tail(entry: str, exc: TopologyLoadError, tail: bytes) -> None:
    text = tail.decode(errors="replace").strip()
    log.info("loading %s refused: %s; its last output:\n%s", entry, exc, text)


# -- the child ----------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    """Load ENTRY under the limits and print ``{"topology": ...}`` or ``{"error": ...}``."""
    parser = argparse.ArgumentParser(prog=f"python -m {_MODULE}")
    parser.add_argument("entry")
    parser.add_argument("--memory", type=int, default=LOAD_MEMORY_BYTES)
    parser.add_argument("--parent", type=int, default=0)
    parser.add_argument("--name", default=None)
    args = parser.parse_args(argv)
    out = child_start(args.memory, args.parent)  # the file's prints go to standard error
    child_answer(out, _described(args.entry, args.memory, args.name))  # no atexit hooks


def _described(entry: str, memory: int, name: str | None = None) -> dict[str, Any]:
    too_big = (
        f"loading {entry} needs more than {mib(memory)} MiB of memory, the limit: a topology "
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


if __name__ == "__main__":
    main()
