"""Checking a submitted Spark job: its settings (``job_problem``: mode, interval, Spark
master, parameters, folders), and its file, in a child process bounded in time and memory.

A ``.py`` job is Python: importing it runs its top level, so the master never
does. ``check_job`` starts ``python -P -m headwater.cloud.master._spark_check
ENTRY`` in the unpacked job's folder with ``common/_bounded_child.py``'s
``run_bounded``, as topologies are loaded (``common/plan/_child_loader.py``:
the same limits, ``LoadLimits``, the same process-group kill, the same death
with the parent); the child imports the
file and prints ``{"ok": true}`` when it defines a callable ``run`` that takes
two positional parameters (the session and the context), else ``{"error":
REASON}``, the file's own error line. The master imports no PySpark: a job that
imports it at its top level is imported by the child, where it is installed.

A ``.toml`` job is a rollup spec (``headwater spark rollup --spec``): it is parsed here
(data, not code) as the rollup parses it (``cloud/spark/_rollup_spec.py``: dataset, time
column, grains, groups, measures); its columns are the driver's to check, on a worker.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import posixpath
import re
import sys
import tomllib
import traceback
from pathlib import Path, PurePosixPath
from typing import Any

from headwater.common._bounded_child import ChildOutcome, child_answer, child_start, run_bounded
from headwater.common._exceptions import PackageRefusedError
from headwater.common.plan._child_loader import LoadLimits

MODES = ("once", "every", "continuous")
MAX_PARAMS = 64
MAX_PARAM_CHARS = 1024
MAX_EVERY_S = 366 * 86400.0
MAX_PATH_CHARS = 1024
_SPARK_MASTER = re.compile(r"spark://[A-Za-z0-9.-]{1,253}:([0-9]{1,5})")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
_MODULE = "headwater.cloud.master._spark_check"
_ERROR_CHARS = 2000
_MAX_ANSWER = 64 << 10


class JobRefused(PackageRefusedError):
    """A submitted Spark job that does not check (or is too big: ``too_large``): why, in
    one line."""


def check_spec(text: bytes, entry: str) -> None:
    """Refuse (JobRefused) a rollup spec that is not TOML or not a spec (``_rollup_spec``:
    its keys, measures, grains and groups; its columns are checked by the driver, against
    the landing, which only the workers have)."""
    from headwater.cloud.spark._rollup_spec import SpecError, build  # no PySpark in it

    try:
        build(tomllib.loads(text.decode("utf-8")), entry)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise JobRefused(f"{entry} is not a TOML rollup spec: {exc}") from None
    except RecursionError:
        raise JobRefused(f"{entry} is not a TOML rollup spec: nested too deep") from None
    except SpecError as exc:
        said = str(exc)
        raise JobRefused(said if said.startswith(entry) else f"{entry}: {said}") from None


def job_problem(
    mode: str, every_s: float, spark_master: str, params: dict[str, str], folders: list[str]
) -> str | None:
    """Why these settings cannot run a job, or None."""
    if mode not in MODES:
        return f"mode {mode[:40]!r}: once, every (with every_s) or continuous"
    if mode == "every" and not 1.0 <= every_s <= MAX_EVERY_S:
        return f"every_s must be from 1 s to 366 days, got {every_s:g}"
    port = _SPARK_MASTER.fullmatch(spark_master)
    if spark_master and (port is None or not 1 <= int(port[1]) <= 65535):
        return f"spark master {spark_master[:80]!r}: give spark://HOST:PORT (or none: local mode)"
    if len(params) > MAX_PARAMS:
        return f"{len(params)} parameters; the limit is {MAX_PARAMS}"
    for key, value in params.items():
        if not _KEY.fullmatch(key):
            return f"parameter {key[:40]!r}: a name of letters, digits, '_', '.' or '-'"
        if len(value) > MAX_PARAM_CHARS or "\0" in value:
            return f"parameter {key!r}: at most {MAX_PARAM_CHARS} characters, no NUL"
    for folder in folders:
        if folder and (
            not folder.startswith("/") or len(folder) > MAX_PATH_CHARS or "\0" in folder
        ):
            return f"folder {folder[:80]!r}: an absolute path on the workers"
    if len(folders) == 2 and all(folders):  # the landing, the warehouse
        a, b = (PurePosixPath(posixpath.normpath(f)) for f in folders)
        if a == b or a in b.parents or b in a.parents:
            return (
                f"landing {folders[0][:80]!r} and warehouse {folders[1][:80]!r} overlap: give "
                "the warehouse a folder of its own"
            )
    return None


async def check_job(folder: Path, entry: str, limits: LoadLimits) -> None:
    """Refuse (JobRefused) a ``.py`` job that does not import or defines no ``run(spark,
    ctx)``, imported in a child process within ``limits``; never blocks the event loop."""
    got = await run_bounded(_MODULE, [entry], None, limits, _MAX_ANSWER, cwd=folder)
    _outcome(entry, limits, got)


def _outcome(entry: str, limits: LoadLimits, got: ChildOutcome) -> None:
    if got.timed_out:
        raise JobRefused(
            f"importing {entry} took longer than {limits.time_s:g} s: a job file should do its "
            "work in run(spark, ctx), not at the top level"
        )
    if got.code is None or got.code < 0:
        raise JobRefused(
            f"the process importing {entry} was killed by {got.signal_name()} (it "
            f"may have run out of memory: the limit is {limits.memory_mib()} MiB)"
        )
    result = got.answer
    if not isinstance(result, dict):
        raise JobRefused(
            f"{entry} ended the process importing it (exit code {got.code}) before it was "
            "checked: do not exit at the top level of a job file"
        )
    if isinstance(result.get("error"), str):
        raise JobRefused(result["error"][:_ERROR_CHARS])


# -- the child ----------------------------------------------------------------------------
def _checked(entry: str) -> dict[str, Any]:
    path = Path(entry).resolve()
    sys.path.insert(0, str(path.parent))  # its sibling modules import, as on a worker
    try:
        spec = importlib.util.spec_from_file_location("_headwater_job", path)
        if spec is None or spec.loader is None:
            return {"error": f"{entry} is not a Python file"}
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except MemoryError:
        return {"error": f"importing {entry} needs more memory than the limit"}
    except BaseException as exc:  # whatever the file raises
        traceback.print_exc()
        line = f"{type(exc).__name__}: {_text(exc)}"
        return {"error": f"{entry} does not import: {line}"}
    run = getattr(module, "run", None)
    if not callable(run):
        return {"error": f"{entry} defines no run(spark, ctx): a Spark job defines that function"}
    try:
        inspect.signature(run).bind(None, None)
    except (TypeError, ValueError):
        return {
            "error": f"{entry}: run must take two parameters, run(spark, ctx); it is "
            f"run{_signature(run)}"
        }
    return {"ok": True}


def _signature(fn: Any) -> str:
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return "(?)"


def _text(exc: BaseException) -> str:
    try:
        return str(exc).splitlines()[0] if str(exc) else "(no message)"
    except Exception:  # a user exception whose __str__ raises
        return "(no message)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m {_MODULE}")
    parser.add_argument("entry")
    parser.add_argument("--memory", type=int, default=LoadLimits().memory_bytes)
    parser.add_argument("--parent", type=int, default=0)
    args = parser.parse_args(argv)
    out = child_start(args.memory, args.parent)  # the file's prints never reach the answer
    child_answer(out, _checked(args.entry))


if __name__ == "__main__":
    main()
