"""A user's Spark job file, loaded: ``run(spark, ctx)`` from a ``.py`` file, or a rollup spec.

The file is imported by path as a module of a unique name (its folder first on
``sys.path``, so it may import its neighbours), in the process that runs it: the
driver, a child of the worker, never the master. A file that does not import,
defines no ``run`` or a ``run`` that does not take two parameters is a
``JobFileError``: one line naming the file and what to do (the driver's exit
status 3). A ``.toml`` file is a rollup spec, run by ``_rollup_job.run_spec_job``.

``load_job_file`` loads a job file under its own name instead (its folder first on
``sys.path``, left there), for a command that calls more of the file than ``run``
(``headwater spark train`` and the IoT example's training): the file and its
siblings then import it as one module; a module of that name already imported from
elsewhere is an error, not a silent mix.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from headwater.common._exceptions import HeadwaterError

Job = Callable[[Any, Any], object]  # run(spark, ctx)


class JobFileError(HeadwaterError):
    """A job file that cannot be run: it does not import, or defines no ``run(spark, ctx)``."""


def load_job(path: Path) -> Job:
    """The job's ``run(spark, ctx)`` from ``path`` (``JobFileError`` if there is none)."""
    if path.suffix not in (".py", ".toml"):
        raise JobFileError(
            f"{path}: give a .py file defining run(spark, ctx), or a .toml rollup spec"
        )
    if not path.is_file():
        raise JobFileError(f"{path}: no such file")
    if path.suffix == ".toml":
        spec_file = path

        def run_spec(spark: Any, ctx: Any) -> object:
            module = importlib.import_module("headwater.cloud.spark._rollup_job")
            return module.run_spec_job(spark, ctx, spec_file)

        return run_spec
    module = _import(path)
    run = getattr(module, "run", None)
    if run is None or not callable(run):
        raise JobFileError(
            f"{path} defines no run(spark, ctx): a job file defines the function the driver "
            "calls with the Spark session and the job's context"
        )
    try:
        inspect.signature(run).bind(None, None)
    except TypeError:
        raise JobFileError(
            f"{path}: run{inspect.signature(run)} does not take two parameters: "
            "define run(spark, ctx)"
        ) from None
    except ValueError:  # no signature to inspect (a builtin): let the call say
        pass
    return run  # type: ignore[no-any-return]


def _import(path: Path) -> Any:
    real = path.resolve()
    stem = re.sub(r"\W", "_", path.stem)
    digest = hashlib.sha256(str(real).encode()).hexdigest()[:12]
    name = f"headwater_job_{stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, real)
    if spec is None or spec.loader is None:
        raise JobFileError(f"{path}: not a Python file that can be imported")
    module = importlib.util.module_from_spec(spec)
    folder = str(real.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        sys.modules.pop(name, None)
        raise JobFileError(
            f"{path} does not import: SyntaxError: {e.msg} (line {e.lineno})"
        ) from None
    except (Exception, SystemExit) as e:
        sys.modules.pop(name, None)
        line = _line_in(e, real)
        first = (str(e).strip().splitlines() or [""])[0]
        raise JobFileError(
            f"{path} does not import: {type(e).__name__}"
            f"{f': {first}' if first else ''}{f' (line {line})' if line else ''}"
        ) from None
    return module


def _line_in(exc: BaseException, path: Path) -> int | None:
    """The line of ``path`` where ``exc`` passed last, if it did."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
    return frames[-1].lineno if frames else None


def load_job_file(path: str | Path, needs: Sequence[str] = ("run",)) -> ModuleType:
    """The module of the job file ``path``; ``HeadwaterError`` if it is not there, does not
    import, or lacks one of the names ``needs``."""
    file = Path(path).resolve()
    if not file.is_file() or file.suffix != ".py":
        raise HeadwaterError(f"no job file at {str(path)!r}: give a Python file")
    name = file.stem
    if not name.isidentifier():
        raise HeadwaterError(f"{file.name}: a job file's name must be a Python module name")
    loaded = sys.modules.get(name)
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() != file:
        raise HeadwaterError(
            f"{file}: a module named {name!r} is imported already, from "
            f"{getattr(loaded, '__file__', None) or 'elsewhere'}: rename the job file"
        )
    folder, before = str(file.parent), sys.path[:]
    if folder in sys.path:
        sys.path.remove(folder)
    sys.path.insert(0, folder)
    try:
        module = loaded or importlib.import_module(name)
    except BaseException as exc:
        sys.path[:] = before  # a file that does not load leaves nothing behind
        if isinstance(exc, HeadwaterError) or not isinstance(exc, Exception):
            raise
        raise HeadwaterError(f"{file} raised {type(exc).__name__} while loading: {exc}") from exc
    missing = [n for n in needs if not hasattr(module, n)]
    if missing:
        if loaded is None:  # not a job: leave nothing behind
            sys.path[:] = before
            sys.modules.pop(name, None)
        raise HeadwaterError(f"{file} defines no {', '.join(missing)}")
    return module
